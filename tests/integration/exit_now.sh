#!/bin/bash
# exit_now.sh BUILD_DIR - a server process sends its answer and ends at
# once, without closing the connection: half of them through _exit (as
# Python's os._exit, and most forked children, do), half through exit().
# Over TCP the kernel delivers what send() took after the process has gone.
# Over RDMA send() returns once its WRITEs are posted, and the queue pair
# goes with the process, so libsmcr waits at the exit for what the
# process posted to be sent (its links settle): each child must say so in
# its log, and on iWARP, where a completion does not say the peer has it,
# prove it by an RDMA READ.
# A pre-forking server (python, preloaded): each child accepts one
# connection itself, so the connection and its link are the child's own,
# sends 1 MiB and ends; the parent keeps two such children.  A preloaded
# client makes ROUNDS connections, 2 at a time, each with a 1 MiB receive
# buffer (SO_RCVBUF), which it leaves unread for a moment: the answer goes
# out in one send() that the transport takes whole, and the sender ends
# while it is still on its way.  Each client must read the whole MiB,
# byte-exact, then the end.  Every connection and every byte must go over
# $SMCR_TEST_TRANSPORT.
. "$(dirname "$0")/lib.sh"
PORT=24770
ROUNDS=${EXIT_NOW_ROUNDS:-40}
SIZE=1048576
start_smcrd "$PORT" 256

cat > "$WORK/server.py" <<'EOS'
import os, random, socket, sys

host, port, size, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
answer = random.Random(7).randbytes(size)
lsock = socket.create_server((host, port), backlog=64)
print("listening", flush=True)

def serve(n):
    conn, _ = lsock.accept()
    conn.sendall(answer)
    if n % 2:
        os._exit(0)          # _exit: no handler, no finalization
    conn.detach()            # exit(), with the connection open
    sys.exit(0)

children, failed = set(), 0

def reap():
    global failed
    pid, status = os.wait()
    children.discard(pid)
    failed += status != 0

for n in range(rounds):
    if len(children) == 2:
        reap()
    pid = os.fork()
    if pid == 0:
        serve(n)
    children.add(pid)
while children:
    reap()
print("children failed:", failed, flush=True)
EOS
start_bg server smcr "$PY" "$WORK/server.py" "$TEST_ADDR" "$PORT" "$SIZE" "$ROUNDS"
wait_listen "$PORT" "$LAST_PID" || finish
run_mode smcr timeout 600 "$PY" "$(dirname "$0")/answer_clients.py" "$TEST_ADDR" "$PORT" "$SIZE" \
	"$ROUNDS" 2 "$SIZE" 0.2 \
	> "$WORK/client.out" 2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
expect_eq "answers read whole" "$(cat "$WORK/client.out")" "exact $ROUNDS"
# what a short answer saw, and why its sender failed, on the FAIL lines
expect_eq "answers cut short or failed" \
	"$(grep -E "^(differs|after) " "$WORK/client.err" | sort | uniq -c)" ""
stop_bg "$LAST_PID" - 30
expect_eq "server" "$(cat "$WORK/server.out")" "listening
children failed: 0"
expect_eq "the server's errors" "$(grep -E "^[A-Za-z]*(Error|Exception)|Traceback" "$WORK/server.err")" ""
on_transport "senders that end at once" "$ROUNDS" $((ROUNDS * SIZE))
expect_eq "ends that left for TCP" "$(transport_counter left)" 0
# ending_sum WORD: the sum of the numbers before WORD in the server's
# "rdma: ending: N links, M with WRs unsent, K proven by a READ" lines.
ending_sum() {
	awk -v word="$1" '/rdma: ending: /{for (i = 1; i < NF; i++) if ($(i + 1) == word) n += $i}
		END{print n + 0}' "$WORK/server.err"
}
if [ "$TEST_TRANSPORT" = rdma ]; then
	# each child's links settled as it ended (debug lines: "N links, M with WRs unsent")
	expect_eq "server children whose links settled at the end" \
		"$(grep -c 'rdma: ending: ' "$WORK/server.err")" "$ROUNDS"
	echo "links with WRs still unsent as their process ended:" "$(ending_sum with)"
	# on iWARP a completion says only that siw's TCP took the WR: a READ proves delivery
	if ibv_devinfo 2> /dev/null | grep -q 'transport:.*iWARP'; then
		expect_eq "children whose end proved delivery by an RDMA READ (iWARP)" \
			"$(ending_sum proven)" "$ROUNDS"
	else
		expect_eq "ends proven by an RDMA READ (not iWARP: a completion proves it)" \
			"$(ending_sum proven)" 0
	fi
fi
finish
