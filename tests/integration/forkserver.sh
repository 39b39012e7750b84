#!/bin/bash
# forkserver.sh BUILD_DIR - a fork-per-connection server gives its buffers
# back while it runs.  `socat TCP-LISTEN:P,fork EXEC:cat` under the preload
# accepts each connection in the listener, which closes its copy at once,
# and serves it in a child that exits without closing it: nobody withdraws
# the connection's buffer, so smcrd must see that its socket is gone.
# max_memory holds the buffers of one connection and not of two (1 MiB; 2
# MiB over RDMA, where each end also stages what it sends in a buffer as
# large as the peer's RMB):
# ROUNDS connections from a preloaded client, one after the other (the next
# once the last one's child has gone), each echo byte-exact, must all go
# over $SMCR_TEST_TRANSPORT with no fallback (without the sweep the second
# fell back with MEM), and, with the listener still up, smcrd must count no
# buffer memory in use at the end.
# Over RDMA each child answers the Proposal with a link of its own (a
# child cannot use its parent's queue pair, and accept() answers nothing
# there): no end may leave for TCP.
. "$(dirname "$0")/lib.sh"
need socat
PORT=19411
ROUNDS=12
MAX_MEMORY_MB=1
[ "$TEST_TRANSPORT" = rdma ] && MAX_MEMORY_MB=2
start_smcrd $PORT $MAX_MEMORY_MB

# -t 60: after the client's end a child waits for cat's, not 0.5 s (a slow
# guest's cat, preloaded, may answer later; the child then exited first)
start_bg listener smcr socat -t 60 "TCP-LISTEN:$PORT,reuseaddr,fork,bind=$TEST_ADDR" EXEC:cat
listener=$LAST_PID
wait_listen "$PORT" "$listener" || finish

head -c 200000 /dev/urandom > "$WORK/in.bin"
want=$(sha256sum < "$WORK/in.bin")
no_children() { ! pgrep -P "$listener" > /dev/null; }
for round in $(seq "$ROUNDS"); do
	run_mode smcr timeout 20 socat -t5 - "TCP:$TEST_ADDR:$PORT" < "$WORK/in.bin" \
		> "$WORK/out.bin" 2> "$WORK/client-$round.err"
	expect_eq "round $round: client exit status" "$?" 0
	got=$(sha256sum < "$WORK/out.bin")
	[ "$got" = "$want" ] || fail "round $round: echo differs ($(stat -c %s "$WORK/out.bin") bytes)"
	until_true no_children || fail "round $round: the listener's child did not exit"
done
pass "$ROUNDS echoes compared"
on_transport_forked "fork server" "$ROUNDS" $((ROUNDS * 200000))
memory_back "buffer memory in use with the listener still up"
kill -0 "$listener" 2> /dev/null || fail "the listener is gone"
finish
