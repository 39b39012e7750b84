#!/bin/bash
# silent_client.sh BUILD_DIR - an unprivileged user opens connections that
# negotiate SMC in the TCP handshake and then say nothing, no CLC Proposal
# (silent_peer: registered with smcrd, its sockets marked as libsmcr marks
# them), against preloaded root servers:
#  - writers, whose first call is a write (an SMTP, FTP or MySQL greeting):
#    one blocking, a thread per connection (sendall); one non-blocking under
#    epoll, one under poll, each writing when told POLLOUT.  Each silent
#    connection gets, within the bound of the CLC exchange
#    (SMC_CLC_PROPOSAL_WAIT_MS), a CLC Decline NOPROPOSAL (0x03000500) and
#    then the whole banner and the end of the stream (the server shuts its
#    writing down after the banner), over TCP: a hostile peer that began
#    the exchange sees its end before the banner.
#    Meanwhile an ordinary preloaded client of each gets its banner, and the
#    server its line, over $SMCR_TEST_TRANSPORT, with no fallback.
#  - a reader (a thread per connection, blocking in recv): its silent
#    connections hold no buffer memory, however long they stay (smcrd
#    counts none in use, and `smcrctl status` shows the server holding
#    none), where each held the server's whole buffer before.
# The fallback reasons are printed: NOPROPOSAL, once per silent connection
# of a writer, and no other.
. "$(dirname "$0")/../integration/lib.sh" "$1"
need setpriv
PORT=24610                              # writers: +0 threads, +1 epoll, +2 poll; +3 reader
N=20                                    # silent connections per server
BANNER="220 smcr test banner, ready."   # 29 bytes
start_smcrd "$PORT-$((PORT + 3))" 64
test_user smcr-silent
as_user=(setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups)
chmod 755 "$WORK"                       # the user reaches smcrd's socket in $WORK/run

cat > "$WORK/banner.py" <<'EOS'
import selectors, socket, sys, threading
mode, addr, port, banner = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].encode()
lst = socket.socket()
lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lst.bind((addr, port))
lst.listen(128)
print("listening", flush=True)

def serve(c):
    if mode == "threads":
        c.sendall(banner)
    if mode != "reader":
        c.shutdown(socket.SHUT_WR)      # greeted: the client reads to the end
    line = b""
    while not line.endswith(b"\n") and (piece := c.recv(64)):
        line += piece
    print("got", line.decode().strip(), flush=True)
    c.close()

if mode in ("threads", "reader"):
    while True:
        c, _ = lst.accept()
        print("accepted", flush=True)
        threading.Thread(target=serve, args=(c,), daemon=True).start()
# non-blocking: the banner goes when the connection is said writable
sel = selectors.EpollSelector() if mode == "epoll" else selectors.PollSelector()
sel.register(lst, selectors.EVENT_READ)
while True:
    for key, _ in sel.select():
        if key.fileobj is lst:
            c, _ = lst.accept()
            c.setblocking(False)
            sel.register(c, selectors.EVENT_WRITE)
            print("accepted", flush=True)
            continue
        c = key.fileobj
        sel.unregister(c)
        c.send(banner)                  # 29 bytes into an empty socket: all of it
        c.setblocking(True)
        threading.Thread(target=serve, args=(c,), daemon=True).start()
EOS

cat > "$WORK/client.py" <<'EOS'
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
got = b""
while piece := s.recv(64):              # the banner, to the server's end of writing
    got += piece
s.sendall(b"hello\n")
s.close()
print(got.decode())
EOS

MODES=(threads epoll poll reader)
for i in 0 1 2 3; do
	start_bg "server-${MODES[$i]}" smcr "$PY" "$WORK/banner.py" "${MODES[$i]}" "$TEST_ADDR" \
		$((PORT + i)) "$BANNER"
	wait_listen $((PORT + i)) "$LAST_PID" || finish
done

# The reader's silent connections: accepted, and then nothing.
start_bg silent-reader plain "${as_user[@]}" "$BIN/silent_peer" "$TEST_ADDR" $((PORT + 3)) "$N" 0
until_true eval '[ "$(grep -c accepted "$WORK/server-reader.out")" = "$N" ]' ||
	fail "the reader accepted $(grep -c accepted "$WORK/server-reader.out") of $N connections"
expect_eq "buffer memory in use with $N silent connections to the reader" "$(stats_counter in_use)" 0

# The writers' silent connections, and an ordinary client of each meanwhile.
for i in 0 1 2; do
	start_bg "silent-${MODES[$i]}" plain "${as_user[@]}" "$BIN/silent_peer" "$TEST_ADDR" \
		$((PORT + i)) "$N" ${#BANNER}
done
for i in 0 1 2; do
	wait_for "$WORK/silent-${MODES[$i]}.out" "^connected $N" ||
		fail "${MODES[$i]}: the silent connections were not made: $(cat "$WORK/silent-${MODES[$i]}.err")"
	run_mode smcr timeout 30 "$PY" "$WORK/client.py" "$TEST_ADDR" $((PORT + i)) \
		> "$WORK/client-${MODES[$i]}.out" 2> "$WORK/client-${MODES[$i]}.err"
	expect_eq "${MODES[$i]}: an ordinary client beside $N silent ones got" \
		"$(cat "$WORK/client-${MODES[$i]}.out")" "$BANNER"
	until_true grep -q "^got hello" "$WORK/server-${MODES[$i]}.out" ||
		fail "${MODES[$i]}: the server did not get the ordinary client's line"
done
on_transport "the ordinary clients" 3 $((3 * (${#BANNER} + 6))) -
for i in 0 1 2; do
	# 10 s at most for each silent_peer's reads
	until_true eval 'grep -q "^done" "$WORK/silent-${MODES[$i]}.out"' ||
		sleep 10
	expect_eq "${MODES[$i]}: what the silent connections received" \
		"$(grep '^conn ' "$WORK/silent-${MODES[$i]}.out" | cut -d' ' -f3- | sort | uniq -c | xargs)" \
		"$N decline 0x03000500 then $BANNER, end"
done

reasons=$(fallback_reasons | awk '{ printf "%s%s(%s)=%s", (NR > 1 ? " " : ""), $1, $2, $3 }')
echo "fallback reasons: ${reasons:-none}"
fallbacks_seen | sort -k3 | awk '{ print $NF }' | uniq -c | sed 's/^/    logged: /'
expect_eq "fallback reasons" "$reasons" "NOPROPOSAL(0x03000500)=$((3 * N))"
expect_eq "buffer memory in use with $((4 * N)) silent connections open" "$(stats_counter in_use)" 0
"$BIN/smcrctl" status > "$WORK/status.out" 2>&1 || fail "smcrctl status: $(cat "$WORK/status.out")"
expect_eq "what the servers hold, by smcrctl status" \
	"$(awk '$NF ~ /python3/ { print $3 }' "$WORK/status.out" | sort -u | xargs)" "0"
finish
