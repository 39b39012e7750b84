# shellcheck shell=bash disable=SC2034  # REPO is for the scripts that source this
# guest-lib.sh - shared by the guest-side scripts of tests/vm/ (sourced, in
# the guest, after guest-setup.sh).
#
# Owns how a guest reports: every check's output goes to /out/NAME.log and
# one line "PASS NAME" or "FAIL NAME (why)" to /out/results, which run.sh on
# the host prints; guest_finish exits 1 if any check failed, so that the
# guest's status (runvm.sh's) says it too.
#   check NAME SECS CMD...   runs CMD (killed after SECS), PASS if it exits 0;
#                            says on the console how long it took
#   record NAME OK|FAIL WHY  a result found some other way
#   wait_for FILE PATTERN SECS
#   guest_finish             stops the background jobs, exits 0 or 1
set -uo pipefail        # not -e: every check runs, and failures are counted
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: > /out/results
GUEST_FAILED=0

record() {
	if [ "$2" = OK ]; then
		echo "PASS $1" | tee -a /out/results
	else
		echo "FAIL $1 ($3)" | tee -a /out/results
		GUEST_FAILED=1
	fi
}

check() {
	local name=$1 secs=$2 rc start=$SECONDS
	shift 2
	echo "--- $name: $*"
	timeout -k 5 "$secs" "$@" > "/out/$name.log" 2>&1
	rc=$?
	tail -n 5 "/out/$name.log"
	echo "--- $name took $((SECONDS - start)) s"     # in console.log: where a guest's time goes
	case $rc in
		0) record "$name" OK ;;
		124) record "$name" FAIL "killed after $secs s" ;;
		*) record "$name" FAIL "exit status $rc" ;;
	esac
	return "$rc"
}

wait_for() {
	local end=$((SECONDS + $3))
	until grep -q -- "$2" "$1" 2>/dev/null; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.2
	done
}

guest_finish() {
	local pids
	pids=$(jobs -p)
	[ -z "$pids" ] || { kill $pids; wait; } 2>/dev/null
	echo "--- results"
	cat /out/results
	exit "$GUEST_FAILED"
}
