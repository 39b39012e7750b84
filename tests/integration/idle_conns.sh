#!/bin/bash
# variants: shm
# idle_conns.sh BUILD_DIR - idle connections cost nothing.  A preloaded
# echo server (bench_epoll_idle serve) and a preloaded client (hold) with
# 100 connections between them, each of which made one 1-byte round trip
# and then stays silent, both processes waiting without a timeout on all
# of them: in epoll_wait, then, in a second round, in poll.  Over 10 s of
# that, each process must use under 1% of a CPU (utime + stime of
# /proc/PID/stat), and the client's wait must have reported nothing.  A
# wait that spun, or woke periodically to look at its connections, would
# cost more (tests/bench/epoll_idle.c says what it measures; the resource
# bound is the only timed assertion).  With SMCR_TEST_TRANSPORT set (the
# -shm variant), smcrd runs and every connection must be on that transport
# (on_transport); without, the preloaded programs fall back to TCP
# (NODAEMON), which must cost nothing either.  Ports 24010-24011.
. "$(dirname "$0")/lib.sh"
N=100
SECS=10
PORT=24010
daemon=0
with_smcrd "$PORT-$((PORT + 1))" 256 && daemon=1
hz=$(getconf CLK_TCK)

# cpu_ticks PID: its utime + stime, in clock ticks (fields 14 and 15 of
# /proc/PID/stat, counted after the command's closing parenthesis).
cpu_ticks() {
	sed -E 's/.*\) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# under_one_percent NAME TICKS: TICKS over $SECS s is under 1% of a CPU.
under_one_percent() {
	local pct
	pct=$(awk -v t="$2" -v hz="$hz" -v s="$SECS" 'BEGIN { printf "%.2f", 100 * t / hz / s }')
	if [ $(($2 * 100)) -lt $((SECS * hz)) ]; then
		pass "$1: $2 ticks of CPU in ${SECS}s ($pct% of a CPU, < 1%)"
	else
		fail "$1: $2 ticks of CPU in ${SECS}s ($pct% of a CPU, expected < 1%)"
	fi
}

port=$PORT
for wait in epoll poll; do
	start_bg "server-$wait" smcr "$BIN/bench_epoll_idle" serve "$port" "$wait"
	srv=$LAST_PID
	until_true grep -q listening "$WORK/server-$wait.out" ||
		{ fail "$wait: the server did not listen: $(tail -n 3 "$WORK/server-$wait.err")"; continue; }
	# it waits past the measurement, then exits: 0 if its wait reported nothing
	start_bg "hold-$wait" smcr "$BIN/bench_epoll_idle" hold "$port" "$N" $((SECS + 2)) "$wait"
	hold=$LAST_PID
	until_true grep -q ready "$WORK/hold-$wait.out" ||
		{ fail "$wait: the client did not connect: $(tail -n 3 "$WORK/hold-$wait.err")"; continue; }
	s0=$(cpu_ticks "$srv") h0=$(cpu_ticks "$hold")
	sleep "$SECS"
	s1=$(cpu_ticks "$srv") h1=$(cpu_ticks "$hold")
	under_one_percent "$wait: server, $N idle connections" $((s1 - s0))
	under_one_percent "$wait: client, $N idle connections" $((h1 - h0))
	stop_bg "$hold" - 10
	expect_eq "$wait: client exit status (1: an idle connection reported news)" "$?" 0
	stop_bg "$srv"
	[ "$daemon" = 1 ] && on_transport "$wait" "$N" "$N"
	port=$((port + 1))
done
finish
