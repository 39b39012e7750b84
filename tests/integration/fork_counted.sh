#!/bin/bash
# fork_counted.sh BUILD_DIR - a connection's bytes are counted once,
# whichever process moves them.  A preloaded client sends 1 MiB, forks,
# and its child sends 1 MiB more on the same connection and exits; the
# parent then closes.  smcrd's host totals for the transport must say
# 2 MiB out (the client's ends) and 2 MiB in (the sink's), not the 3 MiB
# out a child that started from its parent's count made of it.
. "$(dirname "$0")/lib.sh"
PORT=24670
MIB=$((1 << 20))
start_smcrd "$PORT" 32

cat > "$WORK/sink.py" <<'EOS'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
print("ready", flush=True)
c, _ = s.accept()
n = 0
while (piece := c.recv(65536)):
    n += len(piece)
print("received", n, flush=True)
EOS
cat > "$WORK/client.py" <<'EOS'
import os, socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
size = int(sys.argv[3])
s.sendall(b"p" * size)
pid = os.fork()
if pid == 0:
    s.sendall(b"c" * size)
    os._exit(0)
os.waitpid(pid, 0)
s.close()
EOS

start_bg sink smcr "$PY" "$WORK/sink.py" "$TEST_ADDR" "$PORT"
wait_for "$WORK/sink.out" ready || { fail "the sink did not start"; finish; }
run_mode smcr timeout 60 "$PY" "$WORK/client.py" "$TEST_ADDR" "$PORT" $MIB 2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
until_true grep -qs received "$WORK/sink.out"
expect_eq "the sink received" "$(cat "$WORK/sink.out" | tail -n 1)" "received $((2 * MIB))"
stop_bg "$LAST_PID" -
expect_eq "bytes out and in over $TEST_TRANSPORT, host totals" \
	"$(transport_counter bytes_out) $(transport_counter bytes_in)" "$((2 * MIB)) $((2 * MIB))"
on_transport "the connection" 1 $((2 * MIB))
finish
