#!/bin/bash
# exec_gap.sh BUILD_DIR - a client that writes while the server's process
# is between two images.  xinetd execs sh, which reads a line, then execs
# a second sh that sleeps 6 s before it execs cat, which echoes the rest.
# The client (python, preloaded) says hello, waits 3 s, then echoes 256
# KiB.  Over shared memory every image maps the same buffers: the bytes
# wait in the server's buffer for cat.  Over RDMA the first exec took the
# server's link with it: the client's send finds it down (it was reset,
# ECONNRESET), waits as on a full socket until cat, whose image has no
# link, leaves for TCP (LEAVE), then goes on over TCP after it
# (docs/ARCHITECTURE.md, "Leaving for TCP mid-stream").  The test checks
# the echo, byte-exact, and the path: one connection on
# $SMCR_TEST_TRANSPORT, and over RDMA both ends left (cat's reason
# NOSMCDEV, the client's PEERLEFT), over shm none.
. "$(dirname "$0")/lib.sh"
PORT=24740
start_smcrd "$PORT" 64

cat > "$WORK/serve.sh" <<'EOS'
IFS= read -r hello
exec /bin/sh -c 'sleep 6; exec cat'
EOS
cp "$SRC/tests/integration/used_conns.py" "$WORK/"
cat > "$WORK/client.py" <<'EOS'
import socket, sys, time
import used_conns                # from tests/integration, beside this script

s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
s.sendall(b"hello\n")
time.sleep(3)                    # sh has read it and exec'd
same = used_conns.echoes(s, 262144)
s.shutdown(socket.SHUT_WR)
print("echo %s" % ("exact" if same and s.recv(1) == b"" else "DIFFERS"), flush=True)
EOS
start_xinetd "$PORT" "$WORK/serve.sh"
SERVER=$LAST_PID
run_mode smcr timeout 60 "$PY" "$WORK/client.py" "$TEST_ADDR" "$PORT" > "$WORK/client.out" 2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
expect_eq "echo" "$(cat "$WORK/client.out")" "echo exact"
expect_eq "connections on $TEST_TRANSPORT" "$(transport_counter clients) $(transport_counter servers)" "1 1"
if [ "$TEST_TRANSPORT" = rdma ]; then
	expect_eq "ends that left for TCP" "$(transport_counter left)" 2
	expect_eq "the client's reason" "$(grep -c 'goes on over TCP from here: PEERLEFT' "$WORK/client.err")" 1
else
	expect_eq "ends that left for TCP" "$(transport_counter left)" 0
fi
stop_bg "$SERVER"
finish
