#!/bin/bash
# first_calls.sh BUILD_DIR - two threads' first calls on a client socket
# whose non-blocking connect() completed race to record its outcome: one
# looks up the handshake and sends the Proposal, and the other must wait
# for that, not send the application's bytes on TCP ahead of it (the
# server then took them for a CLC message and reset the connection,
# SYNCERR, which TCP would never do).  A preloaded python client makes
# CONNS connections, each with a non-blocking connect(), waits without a
# call on the socket until the kernel has connected it, then, from two
# threads released at once, sends a line from one and receives the echo
# from the other; a preloaded echo server (echo_server.py) answers.  Every echo must be
# exact, every connection on $TEST_TRANSPORT, none fallen back or reset.
. "$(dirname "$0")/lib.sh"
PORT=19540
CONNS=200
start_smcrd $PORT 512

cat > "$WORK/client.py" <<'EOS'
import socket, sys, threading, time
addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
exact = 0
for i in range(n):
    c = socket.socket()
    c.setblocking(False)
    c.connect_ex((addr, port))
    time.sleep(0.01)            # connected meanwhile: loopback takes microseconds
    c.setblocking(True)         # fcntl: no call that settles the connect
    line = b"line %d of the first calls\n" % i
    go = threading.Barrier(2)
    def send():
        go.wait()
        c.sendall(line)
    t = threading.Thread(target=send)
    t.start()
    go.wait()
    got = b""
    while not got.endswith(b"\n"):
        d = c.recv(100)
        if not d:
            break
        got += d
    t.join()
    exact += got == line
    c.close()
print("exact", exact, flush=True)
EOS
start_bg server smcr "$PY" "$SRC/tests/integration/echo_server.py" "$TEST_ADDR" "$PORT"
wait_listen "$PORT" "$LAST_PID" || finish
LD_PRELOAD=$PRELOAD SMCR_LOG=debug timeout ${FIRST_CALLS_TIMEOUT:-120} "$PY" "$WORK/client.py" "$TEST_ADDR" "$PORT" "$CONNS" \
	> "$WORK/client.out" 2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
expect_eq "echoes byte-exact" "$(cat "$WORK/client.out")" "exact $CONNS"
on_transport "racing first calls" "$CONNS" $((CONNS * 20))
finish
