#!/bin/bash
# amplification.sh BUILD_DIR - an unprivileged user tries to make smcrd
# spend its own memory, descriptors and log on the user's behalf
# (control_hog), with max_processes_per_user at 16:
#  1. 40 control connections, each registering a sparse statistics region
#     that claims a full connection table: reading one faults 676 KiB into
#     smcrd, at every `smcrctl stats`.  smcrd must refuse the regions (not
#     fully allocated) and serve only 16 of the connections, telling the
#     others why; its descriptors and its shared memory (RssShmem) stay
#     where they were, across three `smcrctl stats`; a process of the user
#     beyond the 16 (grant_client, libsmcr's control client) is told why
#     and goes on without smcrd (NODAEMON), and so is its smcrctl (status,
#     stats), which said smcrd was not running before.
#  2. 8 regions fully allocated when registered, then emptied (holes
#     punched) but for the first page, which still claims a full table:
#     smcrd must stop reading them rather than refill them.
#  3. 200 malformed requests, one per connection: smcrd hangs up on each,
#     and logs at most 10 lines for the user, plus one saying it holds the
#     rest back.
#  4. 500 statistics requests in a row on one connection (each reads every
#     process's region): smcrd serves at most 32 a second to a uid but
#     root, refusing the rest with EAGAIN and saying why; root's `smcrctl
#     stats` answers at once.
# Through it all, a root preloaded client and server (socat) get their
# connections over $SMCR_TEST_TRANSPORT, byte-exact, with no fallback (the
# reason printed if one is seen), and `smcrctl status` answers.
. "$(dirname "$0")/../integration/lib.sh" "$1"
need socat setpriv
PORT=24710
CONNS=4
start_smcrd "$PORT" 64
"$BIN/smcrctl" -c "$CONF" set max_processes_per_user=16 > /dev/null || fail "smcrctl set"
test_user smcr-flood
as_flood=(setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups)
chmod 755 "$WORK"                       # the user reaches smcrd's socket in $WORK/run
chmod 1777 "$SAN_DIR"                   # and writes its sanitizer reports
allow_log "smcrd did not register us (max_processes_per_user reached"
fds() { ls "/proc/$SMCRD_PID/fd" 2> /dev/null | wc -l; }
shmem_kib() { awk '/^RssShmem:/ { print $2 }' "/proc/$SMCRD_PID/status"; }
log_lines() { wc -l < "$WORK/smcrd.err"; }
# bounded WHAT: smcrd's descriptors and shared memory after three `smcrctl stats`
# (a client holds two: its connection and its process's pidfd, smcrd/pidfd.h).
bounded() {
	for _ in 1 2 3; do "$BIN/smcrctl" stats > /dev/null || fail "$1: smcrctl stats"; done
	if [ "$(fds)" -le $((fds_before + 2 * 16 + 4)) ]; then
		pass "$1: smcrd's descriptors: $(fds) ($fds_before before, 16 clients allowed)"
	else
		fail "$1: smcrd holds $(fds) descriptors, $fds_before before (16 clients allowed)"
	fi
	if [ "$(shmem_kib)" -le $((shmem_before + 1024)) ]; then
		pass "$1: smcrd's RssShmem: $(shmem_kib) KiB ($shmem_before KiB before)"
	else
		fail "$1: smcrd's RssShmem: $(shmem_kib) KiB, $shmem_before KiB before"
	fi
}
fds_before=$(fds) shmem_before=$(shmem_kib) lines_before=$(log_lines)

# 1. Sparse regions, more connections than the user may have.
start_bg sparse plain "${as_flood[@]}" "$BIN/control_hog" register 40 sparse
sparse=$LAST_PID
wait_for "$WORK/sparse.out" '^done' || { fail "no end to the sparse regions: $(cat "$WORK/sparse.err")"; finish; }
expect_eq "what smcrd said to the 40 connections" \
	"$(sed 's/: \(.*\) reached: .*/: \1/; s/: \(the statistics memfd is not fully allocated\).*/: \1/' "$WORK/sparse.out" |
		grep -v '^done' | sort | uniq -c | xargs)" \
	"24 refused: max_processes_per_user 16 region refused: the statistics memfd is not fully allocated"
bounded "sparse regions"
SMCR_LOG=debug "${as_flood[@]}" "$BIN/grant_client" 4096 > "$WORK/beyond.out" 2> "$WORK/beyond.err"
expect_eq "the user's 17th process" "$(head -n 1 "$WORK/beyond.out")" "refused 4096: Transport endpoint is not connected"
expect_eq "is told why" "$(grep -c 'smcrd did not register us (max_processes_per_user reached: smcrd serves 16 processes of uid' "$WORK/beyond.err")" 1
"${as_flood[@]}" "$BIN/smcrctl" status > "$WORK/status-beyond.out" 2>&1
expect_eq "the user's smcrctl status, beyond the 16" "$(head -n 1 "$WORK/status-beyond.out" | cut -c 1-53)" \
	"smcrd:       running, refused: max_processes_per_user"
"${as_flood[@]}" "$BIN/smcrctl" stats > /dev/null 2> "$WORK/stats-beyond.err"
expect_eq "the user's smcrctl stats, beyond the 16" "$(cut -c 1-59 "$WORK/stats-beyond.err")" \
	"smcrctl: smcrd refused: max_processes_per_user reached: smc"
stop_bg "$sparse" KILL > /dev/null

# 2. Regions emptied once registered.
start_bg punched plain "${as_flood[@]}" "$BIN/control_hog" register 8 punched
punched=$LAST_PID
wait_for "$WORK/punched.out" '^done' || { fail "no end to the punched regions: $(cat "$WORK/punched.err")"; finish; }
expect_eq "regions registered, then punched" "$(grep -c '^registered' "$WORK/punched.out")" 8
bounded "punched regions"
stop_bg "$punched" KILL > /dev/null

# 3. Malformed requests: the log.
"${as_flood[@]}" "$BIN/control_hog" malformed 200 > "$WORK/malformed.out" 2>&1
expect_eq "malformed requests smcrd hung up on" "$(sed -n 's/^hung up on: //p' "$WORK/malformed.out")" "200 of 200"
lines=$(($(log_lines) - lines_before))
if [ "$lines" -le 11 ]; then
	pass "smcrd logged $lines lines about the user's 249 connections (10 and one saying it stops)"
else
	fail "smcrd logged $lines lines about the user's 249 connections: more than 11"
fi

# 4. Statistics asked for without pause: each reads every region.
"${as_flood[@]}" "$BIN/control_hog" stats 500 > "$WORK/stats.out" 2>&1
read -r served refused <<< "$(sed -n 's/^served: \([0-9]*\) refused: \([0-9]*\).*/\1 \2/p' "$WORK/stats.out")"
if [ "${served:-0}" -ge 1 ] && [ "${refused:-0}" -ge 1 ] &&
   grep -q 'more than 32 times a second: try again' "$WORK/stats.out"; then
	pass "the user's 500 statistics requests: $served served, $refused refused $(grep -o '(.*)' "$WORK/stats.out")"
else
	fail "the user's 500 statistics requests: $(cat "$WORK/stats.out")"
fi
"$BIN/smcrctl" stats > /dev/null || fail "root's smcrctl stats, right after"

victim_unharmed "root's connections after the attacks" "$PORT" "$CONNS" 65536
finish
