#!/bin/bash
# http.sh BUILD_DIR - python3's http.server (threading, selectors) serving a
# directory to curl, once plainly and once with both under libsmcr.so: a 5 MiB
# random file must arrive intact (sha256 equal to the source's, Content-Length
# right), a missing file must give 404, the directory listing and a HEAD
# request must give the same answers in both modes.  Under the preload,
# libsmcr must have been in the server and in every curl, seen each connection
# on both sides, and its byte counters must agree: the server's "bytes out" is
# exactly what the curls counted in (at least the file), its "bytes in" what
# they counted out.
. "$(dirname "$0")/lib.sh"
need curl

SIZE=$((5 * 1024 * 1024))
mkdir -p "$WORK/www/sub"
head -c "$SIZE" /dev/urandom > "$WORK/www/blob.bin"
echo hello > "$WORK/www/sub/hello.txt"
want_sum=$(sha256sum < "$WORK/www/blob.bin")
NCURL=4

port=18080
for mode in plain smcr; do
	start_bg "server-$mode" "$mode" "$PY" -m http.server "$port" --bind 127.0.0.1 --directory "$WORK/www"
	srv=$LAST_PID
	wait_listen "$port" "$srv" || continue
	url=http://127.0.0.1:$port
	c() { local n=$1; shift; run_mode "$mode" timeout 20 curl -sS "$@" 2>> "$WORK/curl-$mode.err" > "$WORK/$mode.$n"; }
	: > "$WORK/curl-$mode.err"

	c code -o "$WORK/$mode.blob" -w '%{http_code} %{size_download}' "$url/blob.bin"
	read -r code size < "$WORK/$mode.code"
	expect_eq "$mode: GET blob.bin status and size" "$code $size" "200 $SIZE"
	expect_eq "$mode: sha256 of blob.bin" "$(sha256sum < "$WORK/$mode.blob")" "$want_sum"
	c missing -o /dev/null -w '%{http_code}' "$url/missing.bin"
	expect_eq "$mode: GET missing.bin status" "$(cat "$WORK/$mode.missing")" 404
	c listing "$url/"
	c head -I "$url/sub/hello.txt"
	sed -nE 's/\r$//; /^(HTTP|Content-Length|Content-type)/p' "$WORK/$mode.head" > "$WORK/$mode.headers"

	stop_bg "$srv" INT 10
	expect_eq "$mode: server exit status" "$?" 0
	if grep -v '^libsmcr' "$WORK/curl-$mode.err" | grep .; then fail "$mode: curl errors"; fi

	err=$WORK/server-$mode.err
	if [ "$mode" = smcr ]; then
		cerr=$WORK/curl-$mode.err
		expect_eq "curl connects seen by libsmcr" "$(seen "$cerr" connect)" "$NCURL"
		expect_eq "server accepts seen by libsmcr" "$(seen "$err" accepted)" "$NCURL"
		read -r s_lis _ s_srv s_in s_out <<< "$(summary "$err" python3 "$srv")"
		expect_eq "server libsmcr summary (listeners, server connections)" "${s_lis:-none} ${s_srv:-none}" "1 $NCURL"
		# Every curl's summary (summary() gives one; add them up here).
		read -r n c_cli c_in c_out <<< "$(sed -nE 's/^libsmcr\[[0-9]+\]: info: curl: tcp: [0-9]+ listener, ([0-9]+) client, [0-9]+ server connections; ([0-9]+) bytes in, ([0-9]+) out.*/\1 \2 \3/p' "$cerr" |
			awk '{n++; c += $1; i += $2; o += $3} END {print n + 0, c + 0, i + 0, o + 0}')"
		expect_eq "curl libsmcr summaries (runs, client connections)" "$n $c_cli" "$NCURL $NCURL"
		expect_at_least "server libsmcr bytes out vs the file" "${s_out:-0}" "$SIZE"
		expect_eq "server libsmcr bytes out = curls' in" "${s_out:-none}" "$c_in"
		expect_eq "server libsmcr bytes in = curls' out" "${s_in:-none}" "$c_out"
	elif grep -q libsmcr "$err" "$WORK/curl-$mode.err"; then
		fail "libsmcr lines in the plain run"
	fi
	port=$((port + 1))
done
# Listing and headers: the same in both modes (nothing in them names the port).
if diff -u "$WORK/plain.listing" "$WORK/smcr.listing" > /dev/null && grep -q 'blob.bin' "$WORK/smcr.listing"; then
	pass "directory listing identical"
else
	fail "directory listing differs or lacks blob.bin"
fi
if diff -u "$WORK/plain.headers" "$WORK/smcr.headers" && grep -q 'Content-Length: 6' "$WORK/smcr.headers"; then
	pass "HEAD identical: $(tr '\n' ' ' < "$WORK/smcr.headers")"
else
	fail "HEAD answers differ or are wrong"
fi
finish
