#!/bin/bash
# Buffer memory through an smcrd restart: the connections that outlive
# smcrd keep their buffers, and the processes holding them, registering
# again with the new smcrd, are charged for them again (smcrd/survivors.h):
# memory in use is what it was before the restart, and all of it comes
# back as those connections close.  Without that, max_memory could be
# exceeded by as much as the survivors hold.
. "$(dirname "$0")/lib.sh"
PORT=24701
AGAIN=24702             # outside port_range_list: plain TCP connections, to register again

start_smcrd "$PORT" 64
SMCR_TEST_AGAIN_PORT=$AGAIN start_bg held smcr "$PY" "$SRC/tests/integration/hold_conn.py" \
	"$TEST_ADDR" "$PORT"
held=$LAST_PID
wait_for "$WORK/held.out" "^held" || { fail "hold_conn.py: $(cat "$WORK/held.err")"; finish; }
read -r _ parent child < "$WORK/held.out"
on_transport "held connection" 1 1
before=$(stats_counter in_use)
expect_at_least "memory in use with the connection held" "$before" 1

# smcrd restarts (same run directory, configuration and cgroup): the
# connection goes on, over shared memory, without it.
stop_bg "$SMCRD_PID" TERM
start_bg smcrd plain "${SMCRD[@]}" -f -c "$CONF"
SMCRD_PID=$LAST_PID
until_true "$BIN/smcrctl" status > /dev/null 2>&1 || { fail "smcrd did not restart"; finish; }
expect_eq "memory in use after the restart, before anyone registers again" \
	"$(stats_counter in_use)" 0

kill -USR1 "$parent" "$child"
allow_log "smcrd went away"
until_true eval '[ "$(grep -c ^again "$WORK/held.out")" = 2 ]' ||
	fail "the processes did not register again: $(cat "$WORK/held.out")"
expect_eq "memory in use once both registered again" "$(stats_counter in_use)" "$before"
granted=$("$BIN/smcrctl" status | awk -v p="$parent" -v c="$child" \
	'$1 == p || $1 == c { n++; sum += $3 } END { print n + 0, sum + 0 }')
expect_eq "smcrctl status: both processes, holding it all" "$granted" "2 $before"
grep -q "process $parent ([^)]*) registers again with 1 connections on SMC: $((before / 2)) of their $((before / 2)) bytes" \
	"$WORK/smcrd.err" && pass "smcrd says what it charged the parent" ||
	fail "smcrd's log: $(grep -i again "$WORK/smcrd.err")"

# The connection ends: everything it held comes back.
stop_bg "$held" TERM
until_true eval '! kill -0 "$child" 2> /dev/null' || fail "the child did not end with its stream"
memory_back "memory in use once the surviving connection closed"
finish
