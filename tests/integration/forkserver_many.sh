#!/bin/bash
# forkserver_many.sh BUILD_DIR - a fork-per-connection server at scale:
# `socat TCP-LISTEN:P,fork EXEC:cat` under the preload serves 1,000
# connections from one preloaded python client, 8 at a time, each echoing
# 4 KiB byte-exact.  Every child exits without closing its connection and
# the listener closed its copy at once, so nobody withdraws the buffers:
# smcrd must find each one gone while the listener runs.  max_memory (32
# MB) holds the buffers of about 60 connections, so without that every
# connection after the first few dozen would fall back with MEM; here all
# must go over $SMCR_TEST_TRANSPORT with no fallback, and with the listener
# still up smcrctl (stats and status) must count no buffer memory in use
# at the end.
# Over RDMA each child answers the Proposal with a link of its own, to the
# one client process: a thousand links made and ended in a row, and no end
# may leave for TCP.
. "$(dirname "$0")/lib.sh"
need socat
PORT=19412
CONNS=1000
start_smcrd $PORT 32

# -t 60: after the client's end a child waits for cat's, not 0.5 s (a slow
# guest's cat, preloaded, may answer later; the child then exited first)
start_bg listener smcr socat -t 60 "TCP-LISTEN:$PORT,reuseaddr,fork,backlog=64,bind=$TEST_ADDR" EXEC:cat
listener=$LAST_PID
wait_listen "$PORT" "$listener" || finish

run_mode smcr timeout 300 "$PY" "$(dirname "$0")/echo_clients.py" "$TEST_ADDR" "$PORT" "$CONNS" 8 4096 \
	> "$WORK/client.out" 2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
expect_eq "echoes" "$(cat "$WORK/client.out")" "echoes the same: $CONNS"
on_transport_forked "fork server" "$CONNS" $((CONNS * 4096))
memory_back "buffer memory in use with the listener still up"
expect_eq "smcrctl status, with the listener still up" \
	"$("$BIN/smcrctl" status | sed -n 's/^memory: *\([0-9.]*\) MiB in use.*/\1/p')" 0.0
kill -0 "$listener" 2> /dev/null || fail "the listener is gone"
finish
