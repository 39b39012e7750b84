#!/bin/bash
# smcrd_privileges.sh BUILD_DIR - smcrd, which every local user talks to,
# keeps of root's capabilities only the one it still needs once set up
# (smcrd/privileges.c): a flaw in it reached by a user's request then
# gives that user no more than that.  smcrd started as lib.sh's
# start_smcrd starts it (root, full capabilities) must:
#  - hold exactly CAP_BPF (CAP_SYS_ADMIN on a kernel without CAP_BPF) in
#    its effective, permitted and bounding sets, nothing inheritable or
#    ambient, and no_new_privs;
#  - still serve: root's preloaded socat pair, and an unprivileged user's,
#    over $SMCR_TEST_TRANSPORT with no fallback, the user's processes named
#    in `smcrctl status` (smcrd reads /proc of another uid);
#  - reload: `smcrctl set` adds a port, and connections to it go over the
#    transport (the new policy is a new BPF map, made without root);
#  - exit cleanly on SIGTERM, its program no longer attached to the cgroup
#    (bpftool) and its socket and pid file removed;
#  - started again with the unit's bounding set and no_new_privs, at
#    log_level debug: come up, and say which capability it kept.
# Before privileges.c, smcrd held every capability (CapEff 000001ffffffffff)
# and no no_new_privs: the first checks fail.
. "$(dirname "$0")/../integration/lib.sh" "$1"
need bpftool setpriv socat findmnt
PORT=24800
CONNS=4
CGROUP=${SMCR_TEST_CGROUP:-$(findmnt -t cgroup2 -no TARGET | head -n 1)}
if [ "$(cat /proc/sys/kernel/cap_last_cap)" -ge 39 ]; then
	KEPT=0000008000000000 KEPT_NAME=CAP_BPF         # bit 39
else
	KEPT=0000000000200000 KEPT_NAME=CAP_SYS_ADMIN   # bit 21
fi

# privileges_are NAME PID: PID's capability sets and no_new_privs, as
# /proc/PID/status shows them.
privileges_are() {
	local name=$1 pid=$2 field
	for field in CapEff CapPrm CapBnd; do
		expect_eq "$name: $field ($KEPT_NAME)" \
			"$(awk -v f="$field:" '$1 == f { print $2 }' "/proc/$pid/status")" "$KEPT"
	done
	for field in CapInh CapAmb; do
		expect_eq "$name: $field" "$(awk -v f="$field:" '$1 == f { print $2 }' "/proc/$pid/status")" \
			0000000000000000
	done
	expect_eq "$name: NoNewPrivs" "$(awk '$1 == "NoNewPrivs:" { print $2 }' "/proc/$pid/status")" 1
}

# attached_here ID: whether bpftool shows program ID attached to $CGROUP as sock_ops.
attached_here() {
	bpftool cgroup show "$CGROUP" | awk -v id="$1" '$1 == id && $2 ~ /sock_ops/ { found = 1 }
		END { exit !found }'
}

start_smcrd "$PORT-$((PORT + 1))" 64
privileges_are "smcrd once set up" "$SMCRD_PID"
PROG=$("$BIN/smcrctl" status | sed -n 's/^negotiation: sock_ops program \([0-9]*\) attached.*/\1/p')
attached_here "$PROG" && pass "bpftool: program $PROG attached to $CGROUP" ||
	fail "bpftool: program '$PROG' not attached to $CGROUP: $(bpftool cgroup show "$CGROUP")"

victim_unharmed "root's connections" "$PORT" "$CONNS" 65536

# An unprivileged user's pair: its memfds, its /proc entries, its quotas.
test_user smcr-capless
AS_USER=(setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups)
chmod 755 "$WORK"                       # the user reaches smcrd's socket in $WORK/run
chmod 1777 "$SAN_DIR"                   # and writes its sanitizer reports
start_bg user-server smcr "${AS_USER[@]}" socat "TCP-LISTEN:$((PORT + 1)),reuseaddr,fork,bind=$TEST_ADDR" EXEC:cat
USER_SERVER=$LAST_PID
wait_listen $((PORT + 1)) "$USER_SERVER" || finish
expect_eq "the user's server in smcrctl status: uid, name (/proc/PID/comm)" \
	"$("$BIN/smcrctl" status | awk -v pid="$USER_SERVER" '$1 == pid { print $2, $4 }')" "$TEST_UID socat"
run_mode smcr "${AS_USER[@]}" timeout 60 "$PY" "$SRC/tests/integration/echo_clients.py" "$TEST_ADDR" \
	$((PORT + 1)) "$CONNS" 2 65536 > "$WORK/user.out" 2> "$WORK/user.err"
expect_eq "the user's echoes" "$(cat "$WORK/user.out")" "echoes the same: $CONNS"
on_transport "the user's connections" "$CONNS" $((CONNS * 65536))
fallbacks_seen

# A reload makes a new policy map: a port added is negotiated at once.
expect_eq "smcrctl set port_range_list (a reload)" \
	"$("$BIN/smcrctl" -c "$CONF" set "port_range_list=$PORT-$((PORT + 2))")" applied
victim_unharmed "connections to the port the reload added" $((PORT + 2)) 2 65536
privileges_are "smcrd after the reload" "$SMCRD_PID"

stop_bg "$SMCRD_PID" TERM
expect_eq "smcrd's exit status on SIGTERM" "$?" 0
until_true bash -c "! bpftool prog show id $PROG > /dev/null 2>&1" &&
	pass "program $PROG detached and freed" || fail "program $PROG still loaded: $(bpftool prog show id "$PROG")"
attached_here "$PROG" && fail "bpftool: program $PROG still attached to $CGROUP"
expect_eq "smcrd's files left in its run directory" "$(ls -A "$SMCR_RUNDIR")" ""

# Started again as conf/smcrd.service starts it (its CapabilityBoundingSet=,
# NoNewPrivileges=yes), at debug level: that is enough, and it says what
# it kept.
bset=-all
for cap in $(sed -n 's/^CapabilityBoundingSet=//p' "$SRC/conf/smcrd.service"); do
	cap=${cap#CAP_}
	bset+=,+${cap,,}
done
"$BIN/smcrctl" -c "$CONF" set log_level=debug > /dev/null || fail "smcrctl set log_level"
start_bg smcrd-debug plain setpriv --bounding-set="$bset" --no-new-privs "${SMCRD[@]}" -f -c "$CONF"
until_true "$BIN/smcrctl" status > /dev/null 2>&1 || { fail "smcrd did not start again: $(cat "$WORK/smcrd-debug.err")"; finish; }
privileges_are "smcrd started again" "$LAST_PID"
expect_eq "smcrd says what it kept" \
	"$(grep -c "capabilities kept (effective, permitted, bounding): $KEPT_NAME" "$WORK/smcrd-debug.err")" 1
stop_bg "$LAST_PID" TERM
expect_eq "smcrd's exit status on SIGTERM" "$?" 0
finish
