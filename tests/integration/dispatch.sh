#!/bin/bash
# dispatch.sh BUILD_DIR - a dispatcher hands each connection to a program it
# execs, two exec hops deep, and the connection carries on over
# $SMCR_TEST_TRANSPORT, byte-exact both ways.  A python server under the
# preload reads a request line, then forks and execs sh with the connection
# as its standard input and output, and waits; sh forks and execs the
# helper the line names, and waits; the helper answers the rest of the
# stream:
#   sed   prefixes each line (stdio: getline and fwrite, which the C library
#         does with its own read and write, not ours: libsmcr puts the
#         standard streams of an image that starts on a connection on its
#         calls, else the answer crossed the TCP socket, the client hung
#         and the helper was reset);
#   echo  python echoes with os.read and os.write.
# CLIENTS clients at once per helper, each sends a few MiB of text lines
# while it reads the answer, and compares it with what it expects.  Every
# helper exits 0, every connection went over the transport, none fell back,
# and once the processes that held them are gone smcrd counts no buffer in
# use.  Over RDMA the helpers, whose images have no link, go on over TCP
# (LEAVE) after the request line, and their clients after them; the
# dispatcher, which holds each connection until its helper is done, gives
# back its view of each (its staging buffer's grant was kept until it
# exited: 10 MiB for 40 connections).
. "$(dirname "$0")/lib.sh"
need sed
PORT=19450
CLIENTS=20
SIZE=$((3 << 20))               # bytes of text each client sends
start_smcrd $PORT 256

cat > "$WORK/dispatcher.py" <<'EOF'
import os, socket, sys, threading
addr, port, hop = sys.argv[1], int(sys.argv[2]), sys.argv[3]
helpers = {b"sed": ["sed", "s/^/> /"], b"echo": [sys.executable, sys.argv[4]]}
said = threading.Lock()                         # one thread's line at a time
def serve(c):
    line = b""
    while not line.endswith(b"\n"):             # one byte at a time: no more than the line
        b = c.recv(1)
        if not b:
            break
        line += b
    pid = os.fork()
    if pid == 0:
        os.dup2(c.fileno(), 0)
        os.dup2(c.fileno(), 1)
        os.execv("/bin/sh", ["sh", hop] + helpers[line.strip()])
    _, status = os.waitpid(pid, 0)
    c.close()
    with said:
        print("helper", line.strip().decode(), "exit", os.waitstatus_to_exitcode(status), flush=True)
s = socket.create_server((addr, port), backlog=64)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,)).start()
EOF
# The first hop: sh runs the helper as its child (not exec) and waits.
cat > "$WORK/hop.sh" <<'EOF'
"$@"
status=$?
exit $status
EOF
cat > "$WORK/echo.py" <<'EOF'
import os
while d := os.read(0, 65536):
    while d:
        d = d[os.write(1, d):]
EOF
# client.py ADDR PORT HELPER CLIENTS SIZE: prints "same N" if all N answers
# were what HELPER makes of the text sent.
cat > "$WORK/client.py" <<'EOF'
import base64, hashlib, os, socket, sys, threading
addr, port, helper, clients, size = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
results = []
def one():
    data = base64.encodebytes(os.urandom(size * 3 // 4))
    want = b"".join(b"> " + l for l in data.splitlines(True)) if helper == "sed" else data
    c = socket.create_connection((addr, port))
    c.sendall(helper.encode() + b"\n")
    def send():
        c.sendall(data)
        c.shutdown(socket.SHUT_WR)
    sender = threading.Thread(target=send)
    sender.start()
    got = hashlib.sha256()
    n = 0
    while chunk := c.recv(1 << 16):
        got.update(chunk)
        n += len(chunk)
    sender.join()
    c.close()
    results.append("same" if got.digest() == hashlib.sha256(want).digest()
                   else "differs (%d of %d bytes)" % (n, len(want)))
threads = [threading.Thread(target=one) for _ in range(clients)]
[t.start() for t in threads]
[t.join() for t in threads]
bad = [r for r in results if r != "same"]
print("same %d" % len(results) if len(results) == clients and not bad else "%d answers: %s" % (len(results), bad[:5]))
EOF

start_bg dispatcher smcr "$PY" "$WORK/dispatcher.py" "$TEST_ADDR" "$PORT" "$WORK/hop.sh" "$WORK/echo.py"
dispatcher=$LAST_PID
wait_listen "$PORT" "$dispatcher" || finish
# every helper waited for: up to a minute (each exits once its client has
# its answer, but sanitizer builds take long to exit)
helpers_done() {
	for _ in $(seq 600); do
		[ "$(grep -c "^helper $1 exit" "$WORK/dispatcher.out")" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
for helper in sed echo; do
	left_before=$(transport_counter left) tcp_before=$(stats_counter tcp_bytes_in)
	run_mode smcr timeout 120 "$PY" "$WORK/client.py" "$TEST_ADDR" "$PORT" "$helper" "$CLIENTS" "$SIZE" \
		> "$WORK/client-$helper.out" 2> "$WORK/client-$helper.err"
	expect_eq "$helper: client exit status" "$?" 0
	expect_eq "$helper: $CLIENTS answers through two exec hops" "$(cat "$WORK/client-$helper.out")" "same $CLIENTS"
	helpers_done "$helper" "$CLIENTS" || fail "$helper: not every helper was waited for"
	expect_eq "$helper: helpers that exited 0" "$(grep -c "^helper $helper exit 0$" "$WORK/dispatcher.out")" "$CLIENTS"
	if [ "$TEST_TRANSPORT" = rdma ]; then
		# an exec'd image has no link: each helper goes on over TCP
		# (LEAVE), and its client after it; the request lines went over RDMA
		on_transport "$helper" "$CLIENTS" $((CLIENTS * (${#helper} + 1)))
		expect_at_least "$helper: bytes received over TCP" \
			"$(($(stats_counter tcp_bytes_in) - tcp_before))" $((CLIENTS * SIZE))
		expect_eq "$helper: ends that left for TCP" \
			"$(($(transport_counter left) - left_before))" $((2 * CLIENTS))
	else
		on_transport "$helper" "$CLIENTS" $((CLIENTS * SIZE))
		expect_eq "$helper: ends that left for TCP" "$(($(transport_counter left) - left_before))" 0
	fi
done
seen=$(fallbacks_seen)
[ -z "$seen" ] || echo "fallbacks libsmcr logged:"$'\n'"$seen"
memory_back "buffer memory in use with the dispatcher still up" 300
finish
