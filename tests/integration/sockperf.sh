#!/bin/bash
# variants: shm
# sockperf.sh BUILD_DIR - sockperf over TCP: ping-pong (14-byte messages, server
# multiplexing with poll) and throughput (65000-byte messages, server with
# epoll), two seconds each, once plainly and once with client and server
# under libsmcr.so.  In both modes: exit status 0, no error, the summary lines,
# no message dropped, duplicated or out of order, every message the client
# sent handled by the server, every ping answered but the one in flight at the
# end.  Under the preload, libsmcr must have been in both and seen the
# connection, and its byte counters must equal message count x message size
# on each side.  (sockperf refuses messages above 65507 bytes, so not 64 KiB.)
# Prints "figure:" lines (p50 one-way latency, MB/s sent) for tests/vm/run.sh.
# On $SMCR_TEST_ADDR (lib.sh); with SMCR_TEST_TRANSPORT set, smcrd runs and
# the connection must go over that transport, and ping-pong is paced at
# 100000 messages/s (unpaced, a round trip through shared memory well under
# a microsecond overruns sockperf's sequence table).  SOCKPERF_SECS (2): each
# run.
. "$(dirname "$0")/lib.sh"
need sockperf
daemon=0 pace=()
with_smcrd 11111-11112 256 && daemon=1 pace=(--mps 100000)

T=${SOCKPERF_SECS:-2}
# Enough traffic to mean something, whatever the host's speed (no timed
# assertion: rxe in a TCG guest streams 20-40 MB/s): 200 round trips, and
# 40 messages of 65000 bytes, 10 turns of a 256 KiB ring.
MIN_PINGS=200 MIN_MSGS=40
# num FILE REGEX: the first number captured by REGEX (sed -E) in FILE
num() { sed -nE "s/.*$2.*/\1/p" "$1" | head -n 1; }

port=11111
for mode in plain smcr; do
	for run in ping-pong throughput; do
		case $run in
			ping-pong) msg=14; mux=poll; opts=("${pace[@]}") ;;
			throughput) msg=65000; mux=epoll; opts=() ;;
		esac
		name=$mode-$run
		# The multiplexer can only be chosen with a feed file.
		echo "T:$TEST_ADDR:$port" > "$WORK/feed-$name"
		start_bg "server-$name" "$mode" sockperf server -f "$WORK/feed-$name" -F "$mux" --uc-reuseaddr
		srv=$LAST_PID
		wait_listen "$port" "$srv" || continue
		run_mode "$mode" timeout 15 sockperf "$run" --tcp -i "$TEST_ADDR" -p "$port" -t "$T" -m "$msg" "${opts[@]}" \
			> "$WORK/client-$name.out" 2> "$WORK/client-$name.err"
		expect_eq "$name: client exit status" "$?" 0
		stop_bg "$srv" INT 10
		expect_eq "$name: server exit status" "$?" 0
		cout=$WORK/client-$name.out
		sout=$WORK/server-$name.out
		if grep -q "using $mux() to block" "$sout"; then pass "$name: server uses $mux"; else fail "$name: server does not use $mux"; fi
		errors=$(grep -h 'ERROR' "$cout" "$sout")
		expect_eq "$name: errors reported" "${errors:-none}" none

		handled=$(num "$sout" 'Total ([0-9]+) messages received and handled')
		if [ "$run" = ping-pong ]; then
			if grep -q 'Summary: Latency is' "$cout"; then pass "$name: latency summary"; else fail "$name: no latency summary"; fi
			echo "figure: sockperf $mode ping-pong $(num "$cout" 'percentile 50.000 = *([0-9.]+)') us p50 one-way"
			expect_eq "$name: dropped/duplicated/out-of-order" \
				"$(grep -o '# dropped messages = .*' "$cout")" \
				"# dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0"
			sent=$(num "$cout" '\[Total Run\].*SentMessages=([0-9]+);')
			recvd=$(num "$cout" '\[Total Run\].*ReceivedMessages=([0-9]+)')
			expect_at_least "$name: messages sent" "${sent:-0}" "$MIN_PINGS"
			if [ "${recvd:-0}" -ge $((sent - 1)) ] 2>/dev/null && [ "$recvd" -le "$sent" ]; then
				pass "$name: $recvd of $sent pings answered"
			else
				fail "$name: ${recvd:-no} of ${sent:-no} pings answered"
			fi
		else
			if grep -q 'Summary: BandWidth is' "$cout"; then pass "$name: bandwidth summary"; else fail "$name: no bandwidth summary"; fi
			echo "figure: sockperf $mode throughput $(num "$cout" 'BandWidth is ([0-9.]+) MBps') MB/s sent"
			sent=$(num "$cout" 'Total of ([0-9]+) messages sent')
			recvd=0
			expect_at_least "$name: messages sent" "${sent:-0}" "$MIN_MSGS"
		fi
		expect_eq "$name: messages handled by the server" "${handled:-none}" "${sent:-}"

		libsmcr_saw "$name" "$mode" sockperf "$srv" 1 || continue
		expect_eq "$name: client libsmcr bytes out = $sent x $msg" "${c_out:-none}" $((sent * msg))
		expect_eq "$name: server libsmcr bytes in = $handled x $msg" "${s_in:-none}" $((handled * msg))
		# The client may read the answer in flight when its timer ends
		# without counting it.
		if [ "${c_in:-x}" = $((recvd * msg)) ] || { [ "$run" = ping-pong ] && [ "${c_in:-x}" = $((sent * msg)) ]; }; then
			pass "$name: client libsmcr bytes in: $c_in ($recvd received x $msg)"
		else
			fail "$name: client libsmcr bytes in: ${c_in:-none}, expected $recvd (or $sent) x $msg"
		fi
		if [ "$run" = ping-pong ]; then
			# Every ping answered, the last perhaps not read.
			expect_eq "$name: server libsmcr bytes out = $handled x $msg" "${s_out:-none}" $((handled * msg))
		else
			expect_eq "$name: server libsmcr bytes out" "${s_out:-none}" 0
		fi
		[ "$daemon" = 0 ] || on_transport "$name" 1 $((handled * msg))
	done
	port=$((port + 1))
done
finish
