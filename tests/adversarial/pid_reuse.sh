#!/bin/bash
# pid_reuse.sh BUILD_DIR - an unprivileged user makes smcrd take another
# process for its own: a child of its connects to smcrd, hands the
# connection to its parent and exits; its pid is then reused by a root
# process (here on purpose: control_hog at, clone3 with set_tid), and the
# parent registers on the connection.  smcrd knows a client by the pid that
# SO_PEERCRED gave at connect, and would read /proc of that pid - now
# root's process - for its name and its parent (whose offers a child
# shares).  It must see that the process that connected is gone (its pidfd,
# pinned at accept: smcrd/pidfd.h) and hang up instead:
#  - the REGISTER gets no reply, and smcrd lists no process of the user;
#  - smcrd says why in its log;
#  - root's preloaded connections still go over $SMCR_TEST_TRANSPORT.
. "$(dirname "$0")/../integration/lib.sh" "$1"
need socat setpriv
PORT=24700
start_smcrd "$PORT" 8
test_user smcr-pidreuse
as_user=(setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups)
chmod 755 "$WORK"                       # the user reaches smcrd's socket in $WORK/run

mkfifo "$WORK/go"
chmod 666 "$WORK/go"
start_bg passed plain "${as_user[@]}" sh -c 'exec "$0" passed < "$1"' "$BIN/control_hog" "$WORK/go"
exec 3> "$WORK/go"                      # held open: the hog waits for a line
wait_for "$WORK/passed.out" '^connected' || { fail "no connection: $(cat "$WORK/passed.err")"; finish; }
gone=$(sed -n 's/^connected //p' "$WORK/passed.out")

# The pid of the process that connected, reused by root's process.
start_bg reused plain "$BIN/control_hog" at "$gone" sleep 300
wait_for "$WORK/reused.out" "^running $gone\$" || { fail "pid $gone not reused: $(cat "$WORK/reused.err")"; finish; }
pass "pid $gone, which connected as uid $TEST_UID, is root's $(cat "/proc/$gone/comm") now"

echo go >&3
wait_for "$WORK/passed.out" '^register:' || { fail "no answer to REGISTER"; finish; }
expect_eq "the user's REGISTER on the connection of a process gone (-EPIPE: hung up)" \
	"$(sed -n 's/^register: //p' "$WORK/passed.out")" -32
# (listed, the row would say pid $gone, root's process now, is the user's)
expect_eq "processes of uid $TEST_UID that smcrd lists" \
	"$("$BIN/smcrctl" status | awk -v u="$TEST_UID" '$2 == u { print $1, $2, $4 }')" ""
# at accept, or at the request: whichever came after the exit
wait_for "$WORK/smcrd.err" "process $gone .*has exited: .*control connection.* refused" &&
	pass "smcrd says why it hung up" || fail "smcrd's log: $(tail -n 5 "$WORK/smcrd.err")"

victim_unharmed "root's connections after the attempt" "$PORT" 4 65536
finish
