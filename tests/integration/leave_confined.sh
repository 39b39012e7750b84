#!/bin/bash
# leave_confined.sh BUILD_DIR - a connection already on
# $SMCR_TEST_TRANSPORT whose client then installs a seccomp filter that
# kills it on every wait call (futex, poll, select, epoll), as a
# privilege-separated server's sandboxed child does: before the filter,
# the connection leaves for TCP from the middle of its stream (LEAVE,
# docs/ARCHITECTURE.md), and every byte still arrives, once, in order.
# The client is tests/progs/leave_probe.c: it writes BYTES, reads half of
# their echo, confines itself, then goes on with read() and write()
# alone, so that at the filter each side holds bytes the other sent and it
# has not read.  The echo servers, preloaded, wait in three ways: socat in
# select(), echo_server.py in a blocking recv(), and an asyncio server in
# epoll_wait().  A fourth server echoes the first half, then reads nothing
# until the client says it is confined, so that bytes of the client's
# wait in the server's buffer when it leaves, and the server reads them
# there before the stream.  Each run checks the bytes, that the client
# lived, and the path: one connection on the transport, left at both ends
# (LEFT), with the client's reason CONFINED and the server's PEERLEFT, and
# the bytes after the leave counted as TCP's.
. "$(dirname "$0")/lib.sh"
PORT=24700
BYTES=196608
start_smcrd "$PORT" 64

cat > "$WORK/asyncio_echo.py" <<'PYEOF'
import asyncio, sys
async def echo(r, w):
    while data := await r.read(65536):
        w.write(data)
        await w.drain()
    w.close()
async def main():
    server = await asyncio.start_server(echo, sys.argv[1], int(sys.argv[2]))
    async with server:
        await server.serve_forever()
asyncio.run(main())
PYEOF

cat > "$WORK/paused_echo.py" <<'PYEOF'
import os, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
c, _ = s.accept()
half, echoed = int(sys.argv[3]) // 2, 0
while echoed < half:
    d = c.recv(half - echoed)
    c.sendall(d)
    echoed += len(d)
while not os.path.exists(sys.argv[4]):
    time.sleep(0.05)
while d := c.recv(65536):
    c.sendall(d)
PYEOF

# run NAME ENDS SERVER...: the probe against SERVER (preloaded, on PORT); the
# file $WORK/NAME.go appears once the probe is confined.  ENDS: "once", a
# server that exits after its one connection, is awaited (a SIGTERM during
# ASan's leak check at its exit reads as a sanitizer report); "term", one
# that serves on, is stopped.
run() {
	local name=$1 ends=$2 left_before conns_before tcp_before
	shift 2
	left_before=$(transport_counter left)
	conns_before=$(transport_counter clients)
	tcp_before=$(stats_counter tcp_bytes_in)
	start_bg "$name" smcr "$@"
	SERVER=$LAST_PID
	wait_listen "$PORT" "$SERVER"
	# under ASan, no leak check at exit: it clones a thread, which the filter kills
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		run_mode smcr timeout 60 "$BIN/leave_probe" "$TEST_ADDR" "$PORT" "$BYTES" \
			> "$WORK/$name-probe.out" 2> "$WORK/$name-probe.err" &
	local probe=$!
	for _ in $(seq 300); do grep -q confined "$WORK/$name-probe.out" && break; sleep 0.1; done
	touch "$WORK/$name.go"
	wait "$probe"
	expect_eq "$name: probe exit status (SIGSYS would be 159)" "$?" 0
	expect_eq "$name: echo" "$(tail -n 1 "$WORK/$name-probe.out")" \
		"echo exact: $((2 * BYTES)) bytes"
	expect_eq "$name: connections on $TEST_TRANSPORT" \
		"$(($(transport_counter clients) - conns_before))" 1
	expect_eq "$name: ends that left for TCP" "$(($(transport_counter left) - left_before))" 2
	# the client's second BYTES, at least, went over TCP, and are counted so
	expect_at_least "$name: bytes received over TCP" \
		"$(($(stats_counter tcp_bytes_in) - tcp_before))" "$BYTES"
	expect_eq "$name: the client's reason" \
		"$(grep -c 'goes on over TCP from here: CONFINED' "$WORK/$name-probe.err")" 1
	expect_eq "$name: the server's reason" \
		"$(grep -c 'goes on over TCP from here: PEERLEFT' "$WORK/$name.err")" 1
	if [ "$ends" = once ]; then stop_bg "$SERVER" - 30; else stop_bg "$SERVER"; fi
}

run socat once socat -b 65536 "TCP-LISTEN:$PORT,reuseaddr,bind=$TEST_ADDR" EXEC:cat
run blocking term "$PY" "$SRC/tests/integration/echo_server.py" "$TEST_ADDR" "$PORT"
run asyncio term "$PY" "$WORK/asyncio_echo.py" "$TEST_ADDR" "$PORT"
run paused once "$PY" "$WORK/paused_echo.py" "$TEST_ADDR" "$PORT" "$BYTES" "$WORK/paused.go"
expect_eq "paused: the client's bytes the server read in its buffer after the leave" \
	"$(sed -n 's/.*, \([0-9]*\) of its still to read here/\1/p' "$WORK/paused.err")" $((BYTES / 2))
finish
