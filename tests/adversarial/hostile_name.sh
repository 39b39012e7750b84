#!/bin/bash
# hostile_name.sh BUILD_DIR - a local user names its processes with terminal
# escapes (prctl PR_SET_NAME: ESC sequences that clear the screen and set the
# window title, BEL, a lone C1 CSI byte and 0xff, which are no UTF-8, and a
# backslash) and has them register with smcrd, holding a connection over
# shared memory.  What root then reads - `smcrctl status`, `stats -d`,
# `conns`, their JSON, and smcrd's log of the processes leaving - must hold
# no control byte and no byte beyond ASCII, and must show the name escaped,
# \xHH for each such byte and \\ for the backslash.
. "$(dirname "$0")/../integration/lib.sh" "$1"
PORT=24100
NAME='b"\x1b[2J\x1b]2;\x07\x9b\xff\\A"'         # 13 bytes: the kernel keeps 15
SHOWN='\x1b[2J\x1b]2;\x07\x9b\xff\\A'
start_smcrd "$PORT" 64
"$BIN/smcrctl" -c "$CONF" set log_level=info > /dev/null   # "process ... left" lines
test_user smcr-namer
chmod 755 "$WORK"                       # the user reaches smcrd's socket in $WORK/run
chmod 1777 "$SAN_DIR"                   # and writes its sanitizer reports

start_bg hostile smcr setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups \
	"$PY" "$SRC/tests/integration/hold_conn.py" "$TEST_ADDR" "$PORT" "$NAME"
hostile=$LAST_PID
wait_for "$WORK/hostile.out" '^held' || { fail "the hostile process holds no connection"; finish; }
read -r _ _ child < "$WORK/hostile.out"
expect_eq "the hostile process's name as the kernel has it" \
	"$(od -An -tx1 "/proc/$hostile/comm" | tr -d ' \n')" "1b5b324a1b5d323b079bff5c410a"
expect_eq "its connection (server end) is on" "$(conn_field "$hostile" mode)" shm
expect_eq "its connection (client end) is on" "$(conn_field "$child" mode)" shm

# raw_bytes WHAT TEXT: TEXT holds no byte but tab, newline and printable
# ASCII; the offending lines are shown through cat -v, never raw.
raw_bytes() {
	local bad
	bad=$(LC_ALL=C grep -aP '[^\t\x20-\x7e]' <<< "$2" | cat -v)
	if [ -z "$bad" ]; then pass "$1: no control byte, nothing beyond ASCII"; return; fi
	fail "$1: raw bytes in $(wc -l <<< "$bad") lines:"
	head -n 5 <<< "$bad" | sed 's/^/    /'
}

# shown WHAT TEXT PID: TEXT has a line with PID and the escaped name.
shown() {
	if LC_ALL=C grep -aE "^ *$3 " <<< "$2" | grep -qF -- "$SHOWN"; then
		pass "$1: process $3 shown as $SHOWN"
	else
		fail "$1: process $3 not shown as $SHOWN: $(LC_ALL=C grep -aE "^ *$3 " <<< "$2" | cat -v)"
	fi
}

for view in status "stats -d" conns; do
	# shellcheck disable=SC2086
	out=$("$BIN/smcrctl" $view)
	raw_bytes "smcrctl $view" "$out"
	shown "smcrctl $view" "$out" "$hostile"
	shown "smcrctl $view" "$out" "$child"
done

# json_names VIEW...: "PID COMMAND" of each process in smcrctl VIEW --json,
# as a JSON parser reads them.
json_names() {
	"$BIN/smcrctl" "$@" --json | "$PY" -c '
import json, sys
j = json.load(sys.stdin)
for p in j if isinstance(j, list) else j["processes"]["detail"]:
    print(p["pid"], p["command"])'
}
for view in conns "stats -d"; do
	# shellcheck disable=SC2086
	out=$(json_names $view)
	raw_bytes "smcrctl $view --json" "$out"
	expect_eq "smcrctl $view --json: the hostile process's command" \
		"$(awk -v p="$hostile" '$1 == p { print $2; exit }' <<< "$out")" "$SHOWN"
done

stop_bg "$hostile" TERM
LC_ALL=C until_true grep -qa "process $child (.*) left" "$WORK/smcrd.err" ||
	fail "smcrd logged no hostile process leaving"
raw_bytes "smcrd's log" "$(cat "$WORK/smcrd.err")"
for pid in "$hostile" "$child"; do
	if grep -qF "process $pid ($SHOWN) left" "$WORK/smcrd.err"; then
		pass "smcrd's log: process $pid ($SHOWN) left"
	else
		fail "smcrd's log: no 'process $pid ($SHOWN) left': $(grep -a "process $pid " "$WORK/smcrd.err" | cat -v)"
	fi
done
finish
