#!/bin/bash
# One smcrd per host, by cgroup: an smcrd whose program would run beside
# another smcrd's on some socket is refused, whichever started first.  One
# started at a cgroup whose descendant already has one is refused (both
# programs would write the option on that descendant's sockets); two in
# sibling cgroups act on disjoint sockets and both serve.  The case of an
# ancestor first is integration.control's "a second smcrd".
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { fail "needs root (BPF programs, cgroups)"; finish; }

# The cgroup v2 root, or the cgroup this run is confined to (lib.sh).
CG2=${SMCR_TEST_CGROUP:-$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)}
PARENT=$CG2/smcr-one-test.$$
CHILD=$PARENT/child
SIBLING=$PARENT/sibling
conf=$WORK/smcr.conf
cp "$SRC/conf/smcr.conf" "$conf"
"$BIN/smcrctl" -c "$conf" set enabled=1 "ip_addr_list=127.0.0.1" port_range_list=24700 > /dev/null
rmcgroups() {
	for cg in "$CHILD" "$SIBLING" "$PARENT"; do [ ! -d "$cg" ] || rmdir "$cg"; done
}
trap 'cleanup; rmcgroups' EXIT
mkdir -p "$CHILD" "$SIBLING" || { fail "mkdir $CHILD $SIBLING"; finish; }

# start NAME CGROUP: smcrd NAME attached at CGROUP, run directory $WORK/NAME.
start() {
	mkdir -p "$WORK/$1"
	SMCR_RUNDIR=$WORK/$1 start_bg "$1" plain "$BIN/smcrd" -f -c "$conf" -C "$2"
	for _ in $(seq 50); do SMCR_RUNDIR=$WORK/$1 "$BIN/smcrctl" status > /dev/null 2>&1 && break; sleep 0.1; done
	SMCR_RUNDIR=$WORK/$1 "$BIN/smcrctl" status > /dev/null ||
		{ fail "smcrd $1 did not start: $(cat "$WORK/$1.err")"; finish; }
}

start child "$CHILD"
pass "smcrd at $CHILD serves"
start sibling "$SIBLING"
pass "smcrd at its sibling $SIBLING serves beside it"

mkdir -p "$WORK/parent"
out=$(SMCR_RUNDIR=$WORK/parent timeout 20 "$BIN/smcrd" -f -c "$conf" -C "$PARENT" 2>&1); rc=$?
expect_eq "an smcrd at the parent cgroup exits" "$rc" 1
if grep -q "another smcrd's program (id [0-9]*) already runs for $PARENT/\(child\|sibling\), below $PARENT: one smcrd per host" <<< "$out"; then
	pass "it says another smcrd's program runs below"
else
	fail "smcrd at the parent: $out"
fi
for name in child sibling; do
	if SMCR_RUNDIR=$WORK/$name "$BIN/smcrctl" status | grep -q "attached to $PARENT/$name\$"; then
		pass "smcrd $name still serves"
	else
		fail "smcrd $name: $(SMCR_RUNDIR=$WORK/$name "$BIN/smcrctl" status 2>&1)"
	fi
done
finish
