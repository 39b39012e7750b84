#!/bin/bash
# memory_quota.sh BUILD_DIR - an unprivileged user tries to take all of
# smcrd's max_memory (8 MiB here), so that every other user's connections
# fall back to TCP with MEM: one 280-byte GRANT of all of it, then 256 KiB
# at a time until refused, from 4 control connections (as many processes;
# control_hog grant).  With max_memory_per_process at 25 % and
# max_memory_per_user at its default, 50 %:
#  - the whole-of-max_memory GRANT is refused (-ENOMEM), by the quotas;
#  - no connection holds more than 2 MiB, the user no more than 4 MiB;
#  - a root preloaded client and server (socat) still get their
#    connections over $SMCR_TEST_TRANSPORT, byte-exact, with no fallback
#    (the reason printed if one is seen);
#  - a reload that raises max_memory_per_user to 75 % (and
#    max_memory_per_process to 50 %) lets the user's next grant have 2 MiB
#    more, and no byte beyond.
. "$(dirname "$0")/../integration/lib.sh" "$1"
need socat setpriv
PORT=24700
CONNS=4
MiB=$((1024 * 1024))
start_smcrd "$PORT" 8
"$BIN/smcrctl" -c "$CONF" set max_memory_per_process=25 > /dev/null || fail "smcrctl set"
test_user smcr-hog
as_hog=(setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups)
chmod 755 "$WORK"                       # the user reaches smcrd's socket in $WORK/run

start_bg hog plain "${as_hog[@]}" "$BIN/control_hog" grant 4 $((8 * MiB)) $((256 * 1024))
wait_for "$WORK/hog.out" '^done' || { fail "the hog did not finish: $(cat "$WORK/hog.err")"; finish; }
expect_eq "the user's GRANT of all of max_memory, 4 times" \
	"$(sed -n 's/^first: //p' "$WORK/hog.out" | sort -u)" "-12"
expect_eq "what each of the user's connections holds" \
	"$(sed -n 's/^held \([0-9]*\):.*/\1/p' "$WORK/hog.out" | sort -u | xargs)" "0 $((2 * MiB))"
expect_eq "what the user holds" "$(sed -n 's/^total //p' "$WORK/hog.out")" $((4 * MiB))
expect_eq "why the last grants were refused" \
	"$(sed -n 's/^held [0-9]*: \(max_memory_per_[a-z]*\) reached.*/\1/p' "$WORK/hog.out" | sort | uniq -c | xargs)" \
	"2 max_memory_per_process 2 max_memory_per_user"
expect_eq "memory in use" "$(stats_counter in_use)" $((4 * MiB))

victim_unharmed "root's connections beside the hog" "$PORT" "$CONNS" 65536

# A reload changes the quota for the grants that follow.
"$BIN/smcrctl" -c "$CONF" set max_memory_per_user=75 max_memory_per_process=50 > /dev/null ||
	fail "smcrctl set"
start_bg more plain "${as_hog[@]}" "$BIN/control_hog" grant 1 $((2 * MiB)) $((256 * 1024))
wait_for "$WORK/more.out" '^done' || fail "the second hog did not finish: $(cat "$WORK/more.err")"
expect_eq "after the reload to 75 %, the user's next 2 MiB" "$(sed -n 's/^first: //p' "$WORK/more.out")" 0
expect_eq "and no more" "$(sed -n 's/^held [0-9]*: \(max_memory_per_[a-z]*\) reached.*/\1/p' "$WORK/more.out")" \
	max_memory_per_user
finish
