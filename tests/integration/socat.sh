#!/bin/bash
# variants: shm
# socat.sh BUILD_DIR - a 20 MiB random file sent through socat (client reads the
# file and writes to TCP, server reads TCP and writes a file) in four
# combinations: both plain, both under libsmcr.so, and each side alone under
# it (a preloaded program must interoperate with a plain TCP peer).  Every
# copy must be byte-exact (sha256) and both socats must exit 0.  Wherever
# libsmcr is loaded it must have seen the connection and counted exactly the
# file's size (client: out, server: in) and nothing the other way; where it is
# not, nothing may mention it.  On $SMCR_TEST_ADDR (lib.sh); with
# SMCR_TEST_TRANSPORT set, smcrd runs and the pair under the preload must
# go over that transport, the mixed pairs not.  SOCAT_MIB (20): the size.
. "$(dirname "$0")/lib.sh"
need socat

SIZE=$((${SOCAT_MIB:-20} * 1024 * 1024))
daemon=0
with_smcrd 19001-19004 256 && daemon=1
head -c "$SIZE" /dev/urandom > "$WORK/in.bin"
want_sum=$(sha256sum < "$WORK/in.bin")

port=19001
for pair in plain:plain smcr:smcr smcr:plain plain:smcr; do
	cmode=${pair%:*} smode=${pair#*:}
	name=client-$cmode-server-$smode
	out=$WORK/out-$name.bin
	start_bg "server-$name" "$smode" timeout 40 socat -u "TCP-LISTEN:$port,reuseaddr,bind=$TEST_ADDR" \
		"OPEN:$out,creat,trunc"
	srv=$LAST_PID
	wait_listen "$port" "$srv" || continue
	run_mode "$cmode" timeout 40 socat -u "OPEN:$WORK/in.bin" "TCP:$TEST_ADDR:$port" \
		> "$WORK/client-$name.out" 2> "$WORK/client-$name.err"
	expect_eq "$name: client exit status" "$?" 0
	stop_bg "$srv" - 20
	expect_eq "$name: server exit status" "$?" 0
	if [ -f "$out" ] && [ "$(sha256sum < "$out")" = "$want_sum" ]; then
		pass "$name: $(stat -c %s "$out") bytes, sha256 equal"
	else
		fail "$name: received file differs ($(stat -c %s "$out" 2>/dev/null || echo no) bytes)"
	fi

	cerr=$WORK/client-$name.err
	serr=$WORK/server-$name.err
	if [ "$cmode" = smcr ]; then
		expect_eq "$name: client connects seen by libsmcr" "$(seen "$cerr" connect)" 1
		expect_eq "$name: client libsmcr summary" "$(summary "$cerr" socat)" "0 1 0 0 $SIZE"
	elif grep -q libsmcr "$cerr"; then
		fail "$name: libsmcr lines from the plain client"
	fi
	if [ "$smode" = smcr ]; then
		expect_eq "$name: server accepts seen by libsmcr" "$(seen "$serr" accepted)" 1
		expect_eq "$name: server libsmcr summary" "$(summary "$serr" socat)" "1 0 1 $SIZE 0"
	elif grep -q libsmcr "$serr"; then
		fail "$name: libsmcr lines from the plain server"
	fi
	# A preloaded end facing a plain one falls back to TCP (not checked).
	if [ "$daemon" = 1 ]; then
		if [ "$pair" = smcr:smcr ]; then on_transport "$name" 1 "$SIZE"; else on_transport "$name" 0 0; fi
	fi
	port=$((port + 1))
done
finish
