#!/bin/bash
# leave_both.sh BUILD_DIR - both ends of a connection on
# $SMCR_TEST_TRANSPORT leave for TCP at about the same moment.  Two
# preloaded leave_probe processes (tests/progs/leave_probe.c, --connect
# and --listen) send BYTES each way in step, a chunk at a time, and both
# install a seccomp filter that kills them on any wait or socket call
# (readv and recvmsg too: read and write only) at the same step, halfway.
# Depending on who looks first, one end answers the other's LEAVE before
# its own filter comes (CONFINED and PEERLEFT), or both left before either
# looked (both CONFINED: "both ends left for TCP at once", each reads its
# own RMB out before the stream); test_ring's leave_both_at_once makes
# that case every time.  Every byte must arrive once, in order, both
# ways, both probes must live, and both ends must be counted as left.
# Then the same rounds again with both probes waiting in a level-triggered
# epoll_wait before each read of 1 KiB once confined (their filter allows
# epoll and ppoll then): when both left at once, the bytes in each end's
# RMB must be told readable until they are read out, though the kernel's
# socket has none.  Before, such an end was handed back to the kernel at
# its leave, and both waited for each other's next bytes.
. "$(dirname "$0")/lib.sh"
PORT=24720
CHUNK=16384
BYTES=$((16 * CHUNK))
ROUNDS=3
start_smcrd "$PORT" 64
# under ASan, no leak check at exit: it clones a thread, which the filter kills
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

for round in $(seq "$ROUNDS") $(seq "$ROUNDS" | sed s/^/epoll/); do
	waits=()
	[[ $round = epoll* ]] && waits=(epoll)
	left_before=$(transport_counter left)
	conns_before=$(transport_counter clients)
	tcp_before=$(stats_counter tcp_bytes_in)
	start_bg "listen$round" smcr "$BIN/leave_probe" --listen "$TEST_ADDR" "$PORT" "$BYTES" \
		$((BYTES / 2)) "${waits[@]}"
	listener=$LAST_PID
	wait_listen "$PORT" "$listener" || finish
	run_mode smcr timeout 60 "$BIN/leave_probe" --connect "$TEST_ADDR" "$PORT" "$BYTES" \
		$((BYTES / 2)) "${waits[@]}" > "$WORK/connect$round.out" 2> "$WORK/connect$round.err"
	expect_eq "round $round: the connecting end's exit status (SIGSYS would be 159)" "$?" 0
	stop_bg "$listener" - 30
	expect_eq "round $round: the listening end's exit status" "$?" 0
	for end in "connect$round" "listen$round"; do
		expect_eq "round $round: $end: the stream" "$(tail -n 1 "$WORK/$end.out")" \
			"stream exact: $BYTES bytes each way"
	done
	for end in "connect$round" "listen$round"; do
		expect_eq "round $round: $end: left once, CONFINED or PEERLEFT" \
			"$(grep -c 'goes on over TCP from here: \(CONFINED\|PEERLEFT\)' \
				"$WORK/$end.err")" 1
	done
	confined=$(cat "$WORK/connect$round.err" "$WORK/listen$round.err" |
		grep -c 'goes on over TCP from here: CONFINED')
	crossed=$(cat "$WORK/connect$round.err" "$WORK/listen$round.err" |
		grep -c 'both ends left for TCP at once')
	echo "round $round: $confined ends left on their own, $crossed found the other's LEAVE first"
	cat "$WORK/connect$round.err" "$WORK/listen$round.err" |
		sed -n 's/.*\(both ends left\|the peer left\)[^:]*: /  /p'
	expect_eq "round $round: ends that found the other's LEAVE for an answer" \
		"$crossed" "$(((confined - 1) * 2))"
	expect_eq "round $round: connections on $TEST_TRANSPORT" \
		"$(($(transport_counter clients) - conns_before))" 1
	expect_eq "round $round: ends that left for TCP" \
		"$(($(transport_counter left) - left_before))" 2
	expect_at_least "round $round: bytes received over TCP" \
		"$(($(stats_counter tcp_bytes_in) - tcp_before))" "$BYTES"
done
finish
