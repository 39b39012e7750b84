#!/bin/bash
# subprocess.sh BUILD_DIR - a Python server that uses subprocess or
# posix_spawn, under the preload (tests/integration/subprocess_server.py).
# Python starts a subprocess with vfork: the child runs in the server's
# memory, with its own copy of the descriptor table, dup2s and closes
# there, then execs.
#   answer:  for each connection the server reads a line, runs `true`, and
#            answers; the child's closing of every descriptor above 2 must
#            not touch what libsmcr knows of the server's (before, it ended
#            the server's connection record in the server's memory, and
#            the answer never reached the client);
#   handoff: the server reads a line, hands the connection to `cat` as its
#            stdin and stdout and closes its copy; cat echoes 1 MiB.  The
#            vfork child's exec hands cat a hold on the connection, so that
#            the server's close does not end it before cat takes it;
#   early:   the same hand-off before the server read anything, so before
#            its libsmcr read the client's Proposal (subprocess_client.py
#            says nothing until told): the interposed vfork offers the
#            connection in the server first, so that cat takes up its CLC
#            exchange (before, cat found nothing at smcrd, took it for
#            plain TCP, and echoed the client's Proposal);
#   spawn:   the server reads a line, hands the connection to `cat` with
#            posix_spawn and closes its copy at once: posix_spawn hands
#            cat's image the holds, as an exec does (before, the server's
#            close ended the connection before cat adopted it);
#   system:  as early, but the server runs cat with the C library's
#            system(), which spawns its shell itself: the interposed
#            system() offers first (before, as early);
#   popen:   the same with popen(), the server closing its copy while
#            cat runs.
# Every connection must go over $SMCR_TEST_TRANSPORT with no fallback,
# and every echo be exact.
. "$(dirname "$0")/lib.sh"
need socat
PORT=19530
NEW_PORT=26000  # early, spawn, system, popen
CONNS=4
start_smcrd "$PORT-$((PORT + 1)),$NEW_PORT-$((NEW_PORT + 3))" 64

head -c $((1 << 20)) /dev/urandom > "$WORK/payload"
want=$(sha256sum < "$WORK/payload")
mkfifo "$WORK/handed"

# client MODE PORT I: connection I of MODE; checks its answer or echo.
client() {
	local mode=$1 port=$2 i=$3
	case $mode in
	answer)
		got=$(echo "request $i" | run_mode smcr timeout 30 socat -t 10 - \
			"TCP:$TEST_ADDR:$port" 2>> "$WORK/client-$mode.err")
		expect_eq "answer $i" "$got" "answered after a subprocess: request $i" ;;
	early|system|popen)
		run_mode smcr timeout 30 "$PY" "$(dirname "$0")/subprocess_client.py" "$TEST_ADDR" \
			"$port" "$WORK/handed" "$WORK/payload" 1 > "$WORK/echo" 2>> "$WORK/client-$mode.err"
		expect_eq "$mode $i: echo sha256" "$(sha256sum < "$WORK/echo")" "$want" ;;
	*)
		{ echo "request $i"; cat "$WORK/payload"; } | run_mode smcr timeout 30 \
			socat -t 10 - "TCP:$TEST_ADDR:$port" > "$WORK/echo" 2>> "$WORK/client-$mode.err"
		expect_eq "$mode $i: echo sha256" "$(sha256sum < "$WORK/echo")" "$want" ;;
	esac
}

for mode in answer handoff early spawn system popen; do
	case $mode in answer) port=$PORT ;; handoff) port=$((PORT + 1)) ;;
	early) port=$NEW_PORT ;; spawn) port=$((NEW_PORT + 1)) ;; system) port=$((NEW_PORT + 2)) ;;
	popen) port=$((NEW_PORT + 3)) ;; esac
	start_bg "server-$mode" smcr "$PY" "$(dirname "$0")/subprocess_server.py" \
		"$TEST_ADDR" "$port" "$mode" "$CONNS" "$WORK/handed"
	server=$LAST_PID
	wait_listen "$port" "$server" || finish
	for i in $(seq "$CONNS"); do
		client "$mode" "$port" "$i"
	done
	# it exits after CONNS by itself: a TERM could cut short the leak
	# report LeakSanitizer writes as it exits (under ASan)
	stop_bg "$server" - 30
	case $mode in answer) bytes=1 ;; *) bytes=$((CONNS << 20)) ;; esac
	on_transport "$mode" "$CONNS" "$bytes"
done
finish
