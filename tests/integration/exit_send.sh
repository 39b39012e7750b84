#!/bin/bash
# exit_send.sh BUILD_DIR - a fork-per-connection server whose child sends
# its answer and exits at once, without closing the connection.  Over TCP
# the kernel delivers what send() took after the process has gone; over
# RDMA the child's queue pair goes with it, right after its last post.
# The server (python, preloaded) forks per connection; for every other
# connection it first waits until the connection is writable, which ends
# the CLC exchange in the parent.  The child sends 256 KiB and calls
# sys.exit.  A preloaded client makes ROUNDS connections, 4 at a time, and
# each must read all 256 KiB, byte-exact, then the end; every connection
# must go over $SMCR_TEST_TRANSPORT.  Over shared memory the children map
# their parent's buffers.  Over RDMA a child whose parent answered the
# Proposal (those that waited) cannot use its parent's queue pair: it
# leaves for TCP (NOSMCDEV; its client PEERLEFT) and sends over TCP, where
# a blocking send() once failed with EAGAIN and the client read nothing;
# the other children answer with links of their own and leave nothing.
. "$(dirname "$0")/lib.sh"
PORT=24750
ROUNDS=${EXIT_SEND_ROUNDS:-200}
SIZE=262144
start_smcrd "$PORT" 256

cat > "$WORK/server.py" <<'EOS'
import os, random, select, socket, sys

size = int(sys.argv[2])
answer = random.Random(7).randbytes(size)
lsock = socket.create_server((sys.argv[1], int(sys.argv[3])), backlog=64)
print("listening", flush=True)
n = 0
while True:
    conn, _ = lsock.accept()
    n += 1
    if n % 2 == 0:               # the exchange ends here, in the parent
        select.select([], [conn], [], 30)
    if os.fork() == 0:
        lsock.close()
        conn.sendall(answer)
        conn.detach()            # not closed by Python's finalization either
        sys.exit(0)              # exit(), with the connection open
    conn.close()
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
EOS
start_bg server smcr "$PY" "$WORK/server.py" "$TEST_ADDR" "$SIZE" "$PORT"
wait_listen "$PORT" "$LAST_PID" || finish
run_mode smcr timeout 300 "$PY" "$(dirname "$0")/answer_clients.py" "$TEST_ADDR" "$PORT" "$SIZE" \
	"$ROUNDS" 4 \
	> "$WORK/client.out" 2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
expect_eq "answers read whole" "$(cat "$WORK/client.out")" "exact $ROUNDS"
if [ "$TEST_TRANSPORT" = rdma ]; then
	on_transport "exiting senders" "$ROUNDS" 0
	expect_at_least "exiting senders: bytes received over RDMA and TCP" \
		"$(($(transport_counter bytes_in) + $(stats_counter tcp_bytes_in)))" $((ROUNDS * SIZE))
	expect_eq "ends that left for TCP (the child of each parent that waited, its client)" \
		"$(transport_counter left)" "$ROUNDS"
else
	on_transport "exiting senders" "$ROUNDS" $((ROUNDS * SIZE))
	expect_eq "ends that left for TCP" "$(transport_counter left)" 0
fi
finish
