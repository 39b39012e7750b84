#!/bin/bash
# fake_daemon.sh BUILD_DIR - a local user puts a daemon of its own where
# root's processes look for smcrd, and prepares run directories for smcrd.
#  - Root's preloaded programs, pointed at the impostor's socket (as a run
#    directory that user could write would point them), must send it
#    nothing - no statistics region, no connection - stay on TCP, and move
#    their bytes exactly.
#  - smcrd must refuse a run directory another user owns, or one others may
#    write, and make no socket there.
. "$(dirname "$0")/../integration/lib.sh" "$1"
PORT=24150
test_user smcr-impostor
chmod 755 "$WORK"
fake=$WORK/fake
mkdir "$fake"
chown "$TEST_UID" "$fake"

# The impostor's daemon: it accepts, and counts the descriptors it is sent.
cat > "$fake/impostor.py" <<'EOP'
import os, socket, sys

path, log = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
srv.bind(path)
os.chmod(path, 0o666)
srv.listen(16)
got = 0
print("listening", flush=True)
while True:
    conn, _ = srv.accept()
    conn.settimeout(2)
    try:
        while True:
            msg, anc, _, _ = conn.recvmsg(4096, socket.CMSG_SPACE(64 * 4))
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    got += len(data) // 4
            with open(log, "a") as f:
                f.write("message of %d bytes, descriptors so far %d\n" % (len(msg), got))
            if not msg:
                break
    except OSError:
        pass
    conn.close()
EOP
start_bg impostor plain setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups \
	"$PY" "$fake/impostor.py" "$fake/smcrd.sock" "$fake/impostor.log"
wait_for "$WORK/impostor.out" '^listening' || { fail "the impostor's daemon did not start"; finish; }

# Root's programs, told to find smcrd there.
head -c $((1 << 20)) /dev/urandom > "$WORK/data"
export SMCR_RUNDIR=$fake
socat_transfer over_tcp "$PORT"
sent=$(tail -n 1 "$fake/impostor.log" 2> /dev/null | sed -n 's/.*descriptors so far //p')
expect_eq "descriptors the impostor's daemon was sent" "${sent:-0}" 0
for side in server client; do
	n=$(grep -c "is not root's (uid $TEST_UID): not used" "$WORK/over_tcp-$side.err")
	[ "$n" -ge 1 ] && pass "$side: libsmcr refused the impostor ($n times)" ||
		fail "$side: libsmcr never said it refused the impostor"
done
allow_log "is not root's .uid $TEST_UID.: not used"
unset SMCR_RUNDIR

# smcrd_refuses NAME DIR: smcrd with DIR as its run directory exits at once,
# saying why, and makes no socket there.
smcrd_refuses() {
	SMCR_RUNDIR=$2 timeout 10 "${SMCRD[@]}" -f -c "$SRC/conf/smcr.conf" 2> "$WORK/$1.err"
	expect_eq "smcrd in $1: exit status" "$?" 1
	expect_eq "smcrd in $1: says why" \
		"$(grep -c "refusing to start: $2 is not a directory of uid 0 that only it may write" \
			"$WORK/$1.err")" 1
	[ -e "$2/smcrd.sock" ] && fail "smcrd in $1: made its socket there" ||
		pass "smcrd in $1: no socket there"
}
mkdir "$WORK/theirs" "$WORK/open"
chown "$TEST_UID" "$WORK/theirs"
chmod 1777 "$WORK/open"
smcrd_refuses "a run directory of uid $TEST_UID" "$WORK/theirs"
smcrd_refuses "a run directory others may write" "$WORK/open"
finish
