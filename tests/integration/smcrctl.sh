#!/bin/bash
# smcrctl.sh BUILD_DIR - smcrctl and smcrd on a temporary copy of conf/smcr.conf.
#
# smcrctl: every kind of bad value is refused (exit 1, a message naming key and
# reason) and leaves the file byte for byte unchanged; a good set changes only
# its key's line; enable/disable; usage errors exit 2; every command's --help
# and -h exit 0 with its usage.  smcrd: one instance per
# run directory, reload after smcrctl set, a bad file refused on SIGHUP while
# the daemon keeps running, clean exit on SIGTERM, and the detached mode.
set -u

BIN=$(cd "$1" && pwd)/bin
SMCRD=("$BIN/smcrd")            # attached to $SMCR_TEST_CGROUP if set, as in lib.sh
[ -z "${SMCR_TEST_CGROUP:-}" ] || SMCRD+=(-C "$SMCR_TEST_CGROUP")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d /tmp/smcrctl-test.XXXXXX)
CONF=$TMP/smcr.conf
LOG=$TMP/smcrd.log
export SMCR_RUNDIR=$TMP/run
unset SMCR_CONF
failures=0
daemon=

cleanup() {
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

smcrctl() { "$BIN/smcrctl" -c "$CONF" "$@"; }
quiet() { "$@" >/dev/null 2>&1; }

# Waits up to 5 s for PATTERN in the daemon's log.
wait_log() {
	for _ in $(seq 50); do
		grep -q -- "$1" "$LOG" && return 0
		sleep 0.1
	done
	return 1
}

# refused EXPECTED-MESSAGE KEY=VALUE...: exit 1, message shown, file unchanged.
refused() {
	local expected=$1 out rc
	shift
	cp "$CONF" "$TMP/saved"
	out=$(smcrctl set "$@" 2>&1)
	rc=$?
	if [ $rc -eq 1 ] && grep -qF -- "$expected" <<<"$out" && cmp -s "$CONF" "$TMP/saved"; then
		pass "set $* refused: $expected"
	else
		fail "set $* (exit $rc, file $(cmp -s "$CONF" "$TMP/saved" && echo unchanged || echo CHANGED)): $out"
	fi
}

# changes_only KEY=VALUE... -- EXPECTED-LINE...: the file differs from before
# exactly by the given lines.
changes_only() {
	local args=() out
	while [ "$1" != "--" ]; do args+=("$1"); shift; done
	shift
	cp "$CONF" "$TMP/saved"
	out=$(smcrctl set "${args[@]}" 2>&1) || { fail "set ${args[*]}: $out"; return; }
	local changed expected
	changed=$(diff "$TMP/saved" "$CONF" | grep '^>' | sed 's/^> //')
	expected=$(printf '%s\n' "$@")
	if [ "$changed" = "$expected" ] &&
	   [ "$(diff "$TMP/saved" "$CONF" | grep -c '^<')" -eq $# ] &&
	   [ "$(wc -l <"$TMP/saved")" -eq "$(wc -l <"$CONF")" ]; then
		pass "set ${args[*]} changed only: $*"
	else
		fail "set ${args[*]}: changed lines: $changed"
	fi
}

cp "$SRC/conf/smcr.conf" "$CONF"

# --- smcrctl: refusals -------------------------------------------------------
refused "enabled: '2' must be 0 or 1" enabled=2
refused "ip_addr_list: '10.0.0.1/33': prefix must be 0-32" ip_addr_list=10.0.0.1/33
refused "ip_addr_list: '::1/129': prefix must be 0-128" ip_addr_list=::1/129
refused "ip_addr_list: '1.2.3' is not an IPv4 or IPv6 address" "ip_addr_list=::1 1.2.3"
refused "port_range_list: '0': ports are 1-65535" port_range_list=0
refused "port_range_list: '65536': ports are 1-65535" port_range_list=1,65536
refused "port_range_list: '5-3': range is reversed" port_range_list=5-3
refused "port_range_list: too many ports and ranges (max 64)" \
	"port_range_list=$(seq -s, 1 65)"
refused "max_memory: '12x' is not a whole number of MB" max_memory=12x
refused "max_memory: '-1' is not a whole number of MB" max_memory=-1
refused "max_memory: '99999999999999999999' is out of range" max_memory=99999999999999999999
refused "rmb_size: '48' is not a power of two" rmb_size=48
refused "log_level: 'loud' must be error, warn, info or debug" log_level=loud
refused "nosuch: unknown key" nosuch=1
refused "port_range_list: '5-3': range is reversed" max_memory=512 port_range_list=5-3

# --- smcrctl: usage ------------------------------------------------------------
cp "$CONF" "$TMP/saved"
smcrctl set max_memory >/dev/null 2>&1; rc=$?
check "set without '=' is a usage error (exit 2, got $rc)" test $rc -eq 2
smcrctl frobnicate >/dev/null 2>&1; rc=$?
check "unknown command exits 2 (got $rc)" test $rc -eq 2
"$BIN/smcrctl" >/dev/null 2>&1; rc=$?
check "no command exits 2 (got $rc)" test $rc -eq 2
check "file unchanged by usage errors" cmp -s "$CONF" "$TMP/saved"
check "help exits 0" quiet smcrctl help
check "--help exits 0" quiet "$BIN/smcrctl" --help
check "-h exits 0" quiet "$BIN/smcrctl" -h

# Every command of smcrctl's table, as `smcrctl help` lists it: COMMAND --help
# and COMMAND -h print its usage on stdout and exit 0; wrong arguments print
# it on stderr and exit 2.
commands=$(smcrctl help | sed -n 's/^  \([a-z]\+\)  .*/\1/p' | xargs)
for cmd in show set enable disable status stats conns check help; do
	check "help lists $cmd ($commands)" grep -qw "$cmd" <<<"$commands"
done
for cmd in $commands; do
	for flag in --help -h; do
		out=$(smcrctl "$cmd" "$flag" 2>/dev/null); rc=$?
		check "$cmd $flag exits 0 (got $rc) and prints its usage" \
			test $rc -eq 0 -a "$(head -1 <<<"$out" | cut -d" " -f1-5)" = "usage: smcrctl [-c FILE] $cmd"
	done
done
out=$(smcrctl stats --bogus 2>&1 >/dev/null); rc=$?
check "stats --bogus exits 2 (got $rc) with its usage on stderr" \
	grep -q '^usage: smcrctl \[-c FILE\] stats ' <<<"$out"
test $rc -eq 2 || fail "stats --bogus exited $rc"
smcrctl frobnicate --help >/dev/null 2>&1; rc=$?
check "unknown command with --help exits 2 (got $rc)" test $rc -eq 2

# --- smcrctl: good changes -----------------------------------------------------
changes_only max_memory=512 -- "max_memory = 512"
changes_only enabled=1 port_range_list=17000-17009 -- \
	"enabled = 1" "port_range_list = 17000-17009"         # shipped off and empty
changes_only rmb_size=128 "ip_addr_list=10.0.0.0/8, ::1" -- \
	"ip_addr_list = 10.0.0.0/8, ::1" "rmb_size = 128"
cp "$CONF" "$TMP/saved"
out=$(smcrctl disable) && grep -q '^enabled = 0$' "$CONF" && [ "$(diff "$TMP/saved" "$CONF" | grep -c '^>')" -eq 1 ]
check "disable sets enabled = 0 ($out)" test $? -eq 0
out=$(smcrctl enable) && grep -q '^enabled = 1$' "$CONF"
check "enable sets enabled = 1 ($out)" test $? -eq 0
check "without smcrd: 'saved; smcrd not running'" test "$out" = "saved; smcrd not running"
out=$(smcrctl show)
check "show lists max_memory 512" grep -qE '^max_memory +512 +MB' <<<"$out"
check "show lists the addresses" grep -qE '^ip_addr_list +10.0.0.0/8 ::1 ' <<<"$out"
out=$(SMCR_CONF=$CONF "$BIN/smcrctl" show)
check "SMCR_CONF names the file" grep -qE '^rmb_size +128 ' <<<"$out"

# --- smcrctl on an invalid file ------------------------------------------------
cp "$CONF" "$TMP/good"
sed -i 's/^shm = 1$/shm = maybe/' "$CONF"
line=$(grep -n '^shm = maybe' "$CONF" | cut -d: -f1)
out=$(smcrctl show 2>&1); rc=$?
check "show on an invalid file: exit 1 and $CONF:$line ($out)" \
	grep -qF "$CONF:$line: shm: 'maybe' must be 0 or 1" <<<"$out"
test $rc -eq 1 || fail "show on an invalid file exited $rc"
refused "would be invalid: $CONF:$line: shm" max_memory=300
changes_only shm=0 -- "shm = 0"
cp "$TMP/good" "$CONF"

# --- smcrd in the foreground ---------------------------------------------------
"${SMCRD[@]}" -f -c "$CONF" 2>"$LOG" &
daemon=$!
check "smcrd logs 'loaded'" wait_log "smcrd: loaded $CONF (enabled=1, 2 addresses, 1 port ranges, max_memory=512 MB)"
check "pid file names smcrd" test "$(head -1 "$SMCR_RUNDIR/smcrd.pid" 2>/dev/null)" = "$daemon"
out=$("${SMCRD[@]}" -f -c "$CONF" 2>&1); rc=$?
check "second smcrd refused: $out" \
	test $rc -eq 1 -a "$out" = "smcrd: refusing to start: smcrd already running (pid $daemon)"
out=$(smcrctl set max_memory=100)
check "smcrctl set with smcrd running says 'applied' ($out)" test "$out" = applied
check "smcrd logs 'reloaded'" wait_log "smcrd: reloaded $CONF (enabled=1, 2 addresses, 1 port ranges, max_memory=100 MB)"
sed -i 's/^port_range_list = .*/port_range_list = 80-20/' "$CONF"
line=$(grep -n '^port_range_list' "$CONF" | cut -d: -f1)
kill -HUP "$daemon"
check "bad file refused on SIGHUP" wait_log "smcrd: reload refused: $CONF:$line: port_range_list: '80-20': range is reversed; keeping the running configuration"
check "smcrd still running after a refused reload" kill -0 "$daemon"
cp "$TMP/good" "$CONF"
kill -TERM "$daemon"
wait "$daemon"; rc=$?
daemon=
check "smcrd exits 0 on SIGTERM (got $rc)" test $rc -eq 0
check "pid file removed" test ! -e "$SMCR_RUNDIR/smcrd.pid"
out=$(smcrctl set max_memory=200)
check "after smcrd exits: 'saved; smcrd not running' ($out)" test "$out" = "saved; smcrd not running"

# --- smcrd refuses an invalid file at start ------------------------------------
sed -i 's/^max_memory = .*/max_memory = 0/' "$CONF"
line=$(grep -n '^max_memory =' "$CONF" | cut -d: -f1)
out=$("${SMCRD[@]}" -f -c "$CONF" 2>&1); rc=$?
check "smcrd refuses an invalid file (exit $rc): $out" \
	test $rc -eq 1 -a "$out" = "smcrd: $CONF:$line: max_memory: '0' is out of range (1-1048576 MB)"
check "no pid file left behind" test ! -e "$SMCR_RUNDIR/smcrd.pid"
cp "$TMP/good" "$CONF"

# --- smcrd detached ------------------------------------------------------------
(cd "$TMP" && "${SMCRD[@]}" -c smcr.conf); rc=$?
pid=$(head -1 "$SMCR_RUNDIR/smcrd.pid" 2>/dev/null)
check "detached smcrd started (exit $rc, pid ${pid:-none})" test $rc -eq 0 -a -n "$pid"
sid=$(ps -o sid= -p "${pid:-0}" 2>/dev/null | tr -d ' ')
check "detached smcrd is alive and in its own session" \
	test -n "$sid" -a "$sid" != "$(ps -o sid= -p $$ | tr -d ' ')"
check "detached smcrd serves the absolute path" \
	test "$(sed -n 2p "$SMCR_RUNDIR/smcrd.pid")" = "$CONF"
out=$(smcrctl set max_memory=64)
check "smcrctl set reaches the detached smcrd ($out)" test "$out" = applied
kill -TERM "${pid:-0}" 2>/dev/null
for _ in $(seq 50); do kill -0 "${pid:-0}" 2>/dev/null || break; sleep 0.1; done
check "detached smcrd exits on SIGTERM" test ! -e "$SMCR_RUNDIR/smcrd.pid"

if [ $failures -ne 0 ]; then
	echo "smcrctl.sh: $failures FAILED"
	exit 1
fi
echo "smcrctl.sh: all passed"
