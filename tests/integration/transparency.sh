#!/bin/bash
# The preload must be invisible: sockprobe calls every interposed function
# (successes and failures, fortified entry points, fork, dup, epoll, ...) and
# prints results, errno values and descriptor numbers; the output with
# libsmcr.so must equal the output without it, and libsmcr must really have
# been in the process (its summary counts what the probe did).
. "$(dirname "$0")/lib.sh"

probe=$BIN/sockprobe
for fn in __read_chk __recv_chk __recvfrom_chk __poll_chk __ppoll_chk; do
	if nm -D "$probe" | grep -q " U $fn"; then pass "probe calls $fn"; else fail "probe does not call $fn"; fi
done

timeout 60 "$probe" > "$WORK/plain.out" 2> "$WORK/plain.err"; plain_rc=$?
LD_PRELOAD=$PRELOAD SMCR_LOG=info timeout 60 "$probe" > "$WORK/smcr.out" 2> "$WORK/smcr.err"; smcr_rc=$?
expect_eq "exit status plain" "$plain_rc" 0
expect_eq "exit status under the preload" "$smcr_rc" 0
if diff -u "$WORK/plain.out" "$WORK/smcr.out"; then
	pass "identical output ($(wc -l < "$WORK/plain.out") calls and values)"
else
	fail "output differs under the preload"
fi
# One listener, the connected client and the non-blocking IPv6 connect, one
# accepted connection; the forked child resets its counters.
summary=$(grep -o 'tcp: .* connections' "$WORK/smcr.err")
expect_eq "libsmcr summary" "$summary" "tcp: 1 listener, 2 client, 1 server connections"
if [ -s "$WORK/plain.err" ]; then fail "stderr without preload: $(cat "$WORK/plain.err")"; fi

# With smcrd running, libsmcr registers, marks its sockets and looks up each
# handshake: still not a single visible difference (its descriptors stay out
# of the application's way), and the probe's own connection negotiated SMC.
if [ "$(id -u)" = 0 ]; then
	export SMCR_RUNDIR=$WORK/run
	printf 'enabled = 1\nip_addr_list = 127.0.0.1 ::1\nport_range_list = 1-65535\n' > "$WORK/smcr.conf"
	start_bg smcrd plain "${SMCRD[@]}" -f -c "$WORK/smcr.conf"
	wait_for "$WORK/smcrd.err" "loaded" || fail "smcrd: $(cat "$WORK/smcrd.err")"
	LD_PRELOAD=$PRELOAD SMCR_LOG=info timeout 60 "$probe" > "$WORK/smcrd.out" 2> "$WORK/smcrd-probe.err"
	if diff -u "$WORK/plain.out" "$WORK/smcrd.out"; then
		pass "identical output with smcrd running (the connection used by a forked child in turn)"
	else
		fail "output differs with smcrd running"
	fi
	summary=$(grep -o 'smc: .* negotiated' "$WORK/smcrd-probe.err")
	expect_eq "handshakes negotiated with smcrd" "$summary" "smc: 1 client, 1 server negotiated"
	kill "$LAST_PID"; wait "$LAST_PID" 2> /dev/null
	unset SMCR_RUNDIR
else
	fail "not root: the run with smcrd (a BPF program) was not tried"
fi

# At the default log level the library prints nothing.
LD_PRELOAD=$PRELOAD timeout 60 "$probe" > /dev/null 2> "$WORK/quiet.err"
if [ -s "$WORK/quiet.err" ]; then fail "library printed at the default level: $(head -3 "$WORK/quiet.err")"; else pass "silent at the default log level"; fi

# Every function named in real.h is exported, and nothing else.
listed=$(interposed_functions)
exported=$(nm -D --defined-only "$LIB" | awk '{print $3}' | sort)
if [ "$listed" = "$exported" ]; then pass "exports exactly the $(echo "$listed" | wc -l) interposed functions"; else fail "exports differ from real.h: $(diff <(echo "$listed") <(echo "$exported") | tr '\n' ' ')"; fi

# smcr_run puts the library in front and runs the program in place.
SMCR_LOG=info "$BIN/smcr_run" "$probe" > "$WORK/run.out" 2> "$WORK/run.err"
if diff -q "$WORK/plain.out" "$WORK/run.out" > /dev/null && grep -q 'tcp: 1 listener' "$WORK/run.err"; then
	pass "smcr_run preloads libsmcr"
else
	fail "smcr_run did not run the probe under the preload"
fi
"$BIN/smcr_run" /nonexistent/program 2> /dev/null; expect_eq "smcr_run of a missing program exits" "$?" 127
"$BIN/smcr_run" -l loud true 2> /dev/null; expect_eq "smcr_run -l with a bad level exits" "$?" 2
finish
