#!/bin/bash
# late_peer.sh BUILD_DIR - peers that take their time, as TCP lets them.
# libsmcr carries the CLC exchange in the applications' own calls, so a
# peer that has not called yet must be waited for as long as TCP would wait
# for its data, not for the 6 s CLC wait.  Each case runs plainly, then
# with both ends under the preload; the outcomes printed must be the same,
# and the preloaded connections must go over $SMCR_TEST_TRANSPORT with no
# reset and no fallback:
#  late-accept: the client connects and sends at once, blocking; the server
#      accepts 7 s later, then echoes;
#  idle-client: the server accepts at once and blocks in recv; the client
#      sends 7 s after its connect;
#  signal: the server blocks in recv with no data coming yet; a SIGALRM
#      handler that raises interrupts it (EINTR), then the data comes;
#  timeout: the same wait with SO_RCVTIMEO 1 s ends with EAGAIN.
. "$(dirname "$0")/lib.sh"
PORT=19510
CASES=(late-accept idle-client signal timeout)
start_smcrd "$PORT" 64

cat > "$WORK/late.py" <<'EOS'
import signal, socket, struct, sys, time
role, case, addr, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
DELAY = 7                       # past the 6 s CLC wait
def say(*what):
    print(case, role, *what, flush=True)
if role == "server":
    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((addr, port))
    lst.listen(1)
    say("listening")
    if case == "late-accept":
        time.sleep(DELAY)
    c, _ = lst.accept()
    if case == "signal":
        def interrupted(sig, frame):
            raise InterruptedError("handler")
        signal.signal(signal.SIGALRM, interrupted)
        signal.alarm(1)
        try:
            c.recv(5)
        except InterruptedError as e:
            say("recv interrupted by the handler:", e)
    if case == "timeout":
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 1, 0))
        try:
            c.recv(5)
        except OSError as e:
            say("recv at SO_RCVTIMEO:", type(e).__name__, e.errno)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 0))
    got = b""
    while len(got) < 5:
        got += c.recv(5 - len(got))
    c.sendall(got.upper())
    say("echoed", got.decode())
    c.close()
else:
    s = socket.create_connection((addr, port))
    if case in ("idle-client", "signal", "timeout"):
        # signal, timeout: well after the server's 1 s alarm or SO_RCVTIMEO
        time.sleep(DELAY if case == "idle-client" else 4)
    s.sendall(b"hello")
    got = b""
    while len(got) < 5 and (piece := s.recv(5 - len(got))):
        got += piece
    say("got", got.decode())
EOS

# run_case MODE CASE: the server and client of CASE, MODE plain or smcr; their output.
run_case() {
	local server
	start_bg "server-$1-$2" "$1" "$PY" "$WORK/late.py" server "$2" "$TEST_ADDR" "$PORT"
	server=$LAST_PID
	wait_for "$WORK/server-$1-$2.out" listening || { fail "$1 $2: the server did not listen"; return; }
	run_mode "$1" timeout 60 "$PY" "$WORK/late.py" client "$2" "$TEST_ADDR" "$PORT" \
		>> "$WORK/$1.out" 2> "$WORK/client-$1-$2.err"
	stop_bg "$server" - 30
	cat "$WORK/server-$1-$2.out" >> "$WORK/$1.out"
}
for c in "${CASES[@]}"; do
	run_case plain "$c"
done
for c in "${CASES[@]}"; do
	run_case smcr "$c"
done
if diff -u "$WORK/plain.out" "$WORK/smcr.out"; then
	pass "the same outcomes plainly and under the preload ($(wc -l < "$WORK/plain.out") lines)"
else
	fail "outcomes differ (- plain TCP, + preloaded)"
fi
expect_eq "every case echoed" "$(grep -c ' client got HELLO$' "$WORK/smcr.out")" "${#CASES[@]}"
on_transport "late peers" "${#CASES[@]}" $((2 * 5 * ${#CASES[@]}))
finish
