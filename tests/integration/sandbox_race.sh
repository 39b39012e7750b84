#!/bin/bash
# sandbox_race.sh BUILD_DIR - a fork in one thread while another thread
# installs a seccomp filter, in a process with 64 connections on
# $SMCR_TEST_TRANSPORT: libsmcr walks every connection in both calls (the
# fork counts each held once more; the filter, which fails the waits, makes
# each leave for TCP).  A fork takes the RDMA links' locks, then the list
# of connections; the leaves took the list, then (to send their CDCs) a
# link's lock.  The window for that deadlock is a few instructions wide
# (between the fork's offers, which wait for the list, and its taking it),
# so this test cannot catch it: the leaves now run outside the list's lock
# by construction.  What it checks is the scenario: the client (tests/progs/
# sandbox_race.c, against a threaded echo server, preloaded) lives, every
# connection echoes after the filter, and the path: 64 connections on the
# transport, each left at both ends, with the client's reason CONFINED.
. "$(dirname "$0")/lib.sh"
PORT=24730
CONNS=64
start_smcrd "$PORT" 128

start_bg server smcr "$PY" "$SRC/tests/integration/echo_server.py" "$TEST_ADDR" "$PORT"
SERVER=$LAST_PID
wait_listen "$PORT" "$SERVER" || finish
left_before=$(transport_counter left)
conns_before=$(transport_counter clients)
run_mode smcr timeout 60 "$BIN/sandbox_race" "$TEST_ADDR" "$PORT" "$CONNS" \
	> "$WORK/race.out" 2> "$WORK/race.err"
expect_eq "client exit status (124: it hung)" "$?" 0
cat "$WORK/race.out"
expect_eq "echo after the filter" "$(tail -n 1 "$WORK/race.out")" "echo exact on $CONNS connections"
expect_eq "connections on $TEST_TRANSPORT" "$(($(transport_counter clients) - conns_before))" "$CONNS"
expect_eq "ends that left for TCP" "$(($(transport_counter left) - left_before))" $((2 * CONNS))
expect_eq "the client's reason" \
	"$(grep -c 'goes on over TCP from here: CONFINED' "$WORK/race.err")" "$CONNS"
stop_bg "$SERVER"
finish
