#!/bin/bash
# sharedconn.sh BUILD_DIR - two processes use one connection at once, one
# reading and one writing, at each end.  A python client connects, then
# forks: the child writes 16 MiB in pieces of random sizes and half-closes,
# while the parent reads the echo.  A python server accepts, then forks:
# the parent reads the connection and passes each piece through a pipe to
# its child, which writes it back.  The echo is byte-exact (sha256 of what
# was sent and what came back), and the connection went over
# $SMCR_TEST_TRANSPORT, both ends shared by two processes all along.
. "$(dirname "$0")/lib.sh"
PORT=19470
start_smcrd "$PORT" 64

cat > "$WORK/server.py" <<'EOS'
import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
c, _ = s.accept()
r, w = os.pipe()
if os.fork() == 0:                      # the writer: what comes down the pipe goes back
    os.close(w)
    while (piece := os.read(r, 65536)):
        c.sendall(piece)
    c.shutdown(socket.SHUT_WR)
    os._exit(0)
os.close(r)
while (piece := c.recv(65536)):          # the reader
    while piece:
        piece = piece[os.write(w, piece):]
os.close(w)
_, status = os.wait()
print("server writer exit", status)
EOS
cat > "$WORK/client.py" <<'EOS'
import hashlib, os, random, socket, sys
data = random.Random(7).randbytes(16 << 20)
c = socket.create_connection((sys.argv[1], int(sys.argv[2])))
if os.fork() == 0:                      # the writer
    rnd, at = random.Random(11), 0
    while at < len(data):
        n = rnd.randint(1, 300000)
        c.sendall(data[at:at + n])
        at += n
    c.shutdown(socket.SHUT_WR)
    os._exit(0)
got = hashlib.sha256()
while (piece := c.recv(100000)):      # the reader
    got.update(piece)
_, status = os.wait()
print("client writer exit", status)
print("echo:", "same" if got.digest() == hashlib.sha256(data).digest() else "differs")
EOS
start_bg server smcr "$PY" "$WORK/server.py" "$TEST_ADDR" "$PORT"
server=$LAST_PID
wait_listen "$PORT" "$server" || finish
run_mode smcr timeout 120 "$PY" "$WORK/client.py" "$TEST_ADDR" "$PORT" > "$WORK/client.out" 2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
expect_eq "client: the writer's exit, and the echo" "$(cat "$WORK/client.out")" \
	"$(printf 'client writer exit 0\necho: same')"
stop_bg "$server" - 20
expect_eq "server exit status" "$?" 0
expect_eq "server: the writer's exit" "$(cat "$WORK/server.out")" "server writer exit 0"
on_transport "shared connection" 1 $((16 << 20))
finish
