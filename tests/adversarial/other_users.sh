#!/bin/bash
# other_users.sh BUILD_DIR - a local user asks smcrd about every process
# using smcr: `smcrctl status`, `conns` and `stats -d`, text and JSON, list
# processes, connections, cursors and bytes, more than ss(8) shows another
# user and past hidepid.  While a root process and one of the user's own
# hold connections over shared memory, the user must see its own processes'
# rows and not root's; root sees both; the host totals (`smcrctl stats`)
# stay visible to the user.
. "$(dirname "$0")/../integration/lib.sh" "$1"
PORT=24110
start_smcrd "$PORT-$((PORT + 1))" 64
test_user smcr-peeker
chmod 755 "$WORK"                       # the user reaches smcrd's socket in $WORK/run
chmod 1777 "$SAN_DIR"                   # and writes its sanitizer reports
AS_USER=(setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups)
as_user() { "${AS_USER[@]}" "$@"; }

# hold NAME PORT [PREFIX...]: hold_conn.py preloaded (as PREFIX says); its
# two pids, sorted, in $HELD.
hold() {
	local name=$1 port=$2
	shift 2
	start_bg "$name" smcr "$@" "$PY" "$SRC/tests/integration/hold_conn.py" "$TEST_ADDR" "$port"
	wait_for "$WORK/$name.out" '^held' || { fail "$name holds no connection"; finish; }
	HELD=$(cut -d' ' -f2- "$WORK/$name.out" | tr ' ' '\n' | sort -n | xargs)
	for pid in $HELD; do
		expect_eq "$name: process $pid's connection is on" "$(conn_field "$pid" mode)" shm
	done
}
hold root "$PORT"
root=$HELD
hold user $((PORT + 1)) "${AS_USER[@]}"
user=$HELD

# listed TEXT: the pids of the rows under TEXT's "PID ..." headings, sorted.
listed() {
	awk '/^ *PID / { rows = 1; next } rows && $1 ~ /^[0-9]+$/ { print $1; next } { rows = 0 }' <<< "$1" |
		sort -nu | xargs
}
# listed_json VIEW...: the same of smcrctl VIEW --json (run by $ASKER).
listed_json() {
	$ASKER "$BIN/smcrctl" "$@" --json | "$PY" -c '
import json, sys
j = json.load(sys.stdin)
print(" ".join(sorted({str(p["pid"]) for p in (j if isinstance(j, list) else j["processes"]["detail"])}, key=int)))'
}

for who in user root; do
	ASKER=
	want="$root $user"
	[ "$who" = user ] && ASKER=as_user want=$user
	for view in status "stats -d" conns; do
		# shellcheck disable=SC2086
		expect_eq "$who's smcrctl $view lists the processes" "$(listed "$($ASKER "$BIN/smcrctl" $view)")" "$want"
	done
	for view in "stats -d" conns; do
		# shellcheck disable=SC2086
		expect_eq "$who's smcrctl $view --json lists the processes" "$(listed_json $view)" "$want"
	done
done
expect_eq "the user's smcrctl status says what it hides" \
	"$(as_user "$BIN/smcrctl" status | grep -c '^processes: .*only root sees')" 1
expect_eq "the user's smcrctl stats: host totals, on shared memory, client" \
	"$(as_user "$BIN/smcrctl" stats | sed -n 's/^ *On shared memory, client: *//p')" 2
finish
