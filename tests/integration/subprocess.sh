#!/bin/bash
# subprocess.sh BUILD_DIR - a Python server that uses subprocess, under the
# preload (tests/integration/subprocess_server.py).  Python starts a child
# with vfork: the child runs in the server's memory, with its own copy of
# the descriptor table, dup2s and closes there, then execs.
#   answer:  for each connection the server reads a line, runs `true`, and
#            answers; the child's closing of every descriptor above 2 must
#            not touch what libsmcr knows of the server's (before, it ended
#            the server's connection record in the server's memory, and
#            the answer never reached the client);
#   handoff: the server reads a line, hands the connection to `cat` as its
#            stdin and stdout and closes its copy; cat echoes 1 MiB.  The
#            vfork child's exec hands cat a hold on the connection, so that
#            the server's close does not end it before cat takes it.
# Every connection must go over $SMCR_TEST_TRANSPORT with no fallback.
. "$(dirname "$0")/lib.sh"
need socat
PORT=19530
CONNS=4
start_smcrd "$PORT-$((PORT + 1))" 64

head -c $((1 << 20)) /dev/urandom > "$WORK/payload"
want=$(sha256sum < "$WORK/payload")
for mode in answer handoff; do
	start_bg "server-$mode" smcr "$PY" "$(dirname "$0")/subprocess_server.py" \
		"$TEST_ADDR" "$PORT" "$mode" "$CONNS"
	server=$LAST_PID
	wait_listen "$PORT" "$server" || finish
	for i in $(seq "$CONNS"); do
		if [ "$mode" = answer ]; then
			got=$(echo "request $i" | run_mode smcr timeout 30 socat -t 10 - \
				"TCP:$TEST_ADDR:$PORT" 2>> "$WORK/client-$mode.err")
			expect_eq "answer $i" "$got" "answered after a subprocess: request $i"
		else
			{ echo "request $i"; cat "$WORK/payload"; } | run_mode smcr timeout 30 \
				socat -t 10 - "TCP:$TEST_ADDR:$PORT" > "$WORK/echo" 2>> "$WORK/client-$mode.err"
			expect_eq "handoff $i: echo sha256" "$(sha256sum < "$WORK/echo")" "$want"
		fi
	done
	stop_bg "$server"
	on_transport "$mode" "$CONNS" 1
	PORT=$((PORT + 1))
done
finish
