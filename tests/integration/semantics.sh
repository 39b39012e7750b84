#!/bin/bash
# semantics.sh BUILD_DIR - the socket semantics of a live SMC connection
# equal TCP's: semprobe (tests/progs/semprobe.c) runs its rows (SIGPIPE,
# shutdown, FIONREAD/SIOCOUTQ, MSG_OOB, MSG_TRUNC, TCP_CORK, timeouts, epoll
# flags, epoll instances nested in epoll, poll and select, and every
# interposed call) plainly, then under the preload with smcrd; the outputs
# must be equal line for line, and every connection of the preloaded run
# must have gone over $TEST_TRANSPORT, with no fallback to TCP (their
# reasons are printed if there are any).  Root (smcrd loads a BPF program).
. "$(dirname "$0")/lib.sh" "$1"
PORT=23010
probe=$BIN/semprobe

# The probe imports every function libsmcr interposes: each row's calls
# reach the library (fortified forms included).
# (Files, not <(...): tests/vm's guests have no /dev/fd.)
nm -D "$probe" | awk '$1 == "U" { sub(/@.*/, "", $2); print $2 }' | sort > "$WORK/imports"
interposed_functions > "$WORK/interposed"
missing=$(comm -23 "$WORK/interposed" "$WORK/imports" | xargs)
expect_eq "interposed functions the probe does not call" "${missing:-none}" none

timeout 120 "$probe" "$TEST_ADDR" "$PORT" > "$WORK/plain.out" 2> "$WORK/plain.err"
expect_eq "plain run exit status" "$?" 0
start_smcrd "$PORT" 64
LD_PRELOAD=$PRELOAD SMCR_LOG=warn timeout 120 "$probe" "$TEST_ADDR" "$PORT" > "$WORK/smcr.out" 2> "$WORK/smcr.err"
rc=$?
# its waits have no timeout: SIGALRM (128 + 14) ends one that never woke
[ "$rc" = 142 ] && fail "the preloaded probe hung (a wait that never ended: a lost wakeup?) after '$(tail -n 1 "$WORK/smcr.out")'"
expect_eq "preloaded run exit status" "$rc" 0
if diff -u "$WORK/plain.out" "$WORK/smcr.out"; then
	pass "identical output over $TEST_TRANSPORT ($(grep -c '^==' "$WORK/plain.out") rows, $(wc -l < "$WORK/plain.out") lines)"
else
	fail "output differs over $TEST_TRANSPORT (- plain TCP, + preloaded)"
fi

# Every connection of the probe took the transport, none fell back but the
# two ends of the connection a sandboxed child makes after its filter
# forbade smcrd's maps (semprobe's last row): TCP, CONFINED; and the
# unused connection handed to a sandboxed child of the raw clone, which
# settles it before its filter goes in: CONFINED there, PEERDECL at the
# client.
conns=$(sed -n 's/^connections: //p' "$WORK/plain.out")
on_transport "semprobe" "${conns:-1}" 1 4
expect_eq "CLC exchanges that failed (reset)" "$(stats_counter handshake_errors)" 0
reasons=$(fallback_reasons | awk '{ printf "%s%s=%s", (NR > 1 ? " " : ""), $1, $3 }')
expect_eq "fallback reasons" "${reasons:-none}" "CONFINED=3 PEERDECL=1"
finish
