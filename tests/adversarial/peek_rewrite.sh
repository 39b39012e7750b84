#!/bin/bash
# peek_rewrite.sh BUILD_DIR - a same-host peer of a preloaded root server
# rewrites, in the server's ring, the bytes it sent, after the server
# peeked at them and before it reads them: the read must return what the
# peek did, as over TCP.  The peer is an unprivileged user's preloaded
# program (attack.py) with one connection to the server over shared
# memory; it finds its request in the memfds its libsmcr maps (the
# server's ring among them) and overwrites it through /proc/self/mem.  The
# two step in turn through files, so that the rewrite comes exactly
# between the peek and the read.
. "$(dirname "$0")/../integration/lib.sh" "$1"
need setpriv
PORT=24650
start_smcrd "$PORT" 32
test_user smcr-rewriter
chmod 755 "$WORK"
: > "$WORK/peeked"
: > "$WORK/rewritten"
chmod 666 "$WORK/rewritten"

# turns.py: each waits for the other's word in a file (the scripts' own directory is on their path)
cat > "$WORK/turns.py" <<'EOS'
import sys, time


def wait_file(path):
    for _ in range(200):
        if open(path).read():
            return
        time.sleep(0.1)
    sys.exit("no word in " + path)
EOS

cat > "$WORK/victim.py" <<'EOS'
import socket, sys
from turns import wait_file

addr, port, work, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])

s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((addr, port))
s.listen(1)
c, _ = s.accept()
peeked = c.recv(n, socket.MSG_PEEK | socket.MSG_WAITALL)
open(work + "/peeked", "w").write("1")
wait_file(work + "/rewritten")
read = c.recv(n, socket.MSG_WAITALL)
print("peeked %r" % peeked)
print("read   %r" % read)
print("same" if read == peeked else "differ", flush=True)
c.sendall(b"done")
c.close()
EOS

cat > "$WORK/attack.py" <<'EOS'
import socket, sys
from turns import wait_file

addr, port, work, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
request = (b"PEEKME-" + b"0123456789" * 10)[:n]
forged = (b"FORGED-" + b"X" * n)[:n]


def rewrite():
    """Every copy of the request in the memfds our libsmcr maps: the server's ring among them."""
    found = 0
    maps = [line.split()[0].split("-") for line in open("/proc/self/maps") if "smcr-rmb" in line]
    with open("/proc/self/mem", "r+b", buffering=0) as mem:
        for lo, hi in maps:
            lo, hi = int(lo, 16), int(hi, 16)
            mem.seek(lo)
            data = mem.read(hi - lo)
            at = data.find(request)
            while at >= 0:
                mem.seek(lo + at)
                mem.write(forged)
                found += 1
                at = data.find(request, at + 1)
    return found


c = socket.create_connection((addr, port))
c.sendall(request)
wait_file(work + "/peeked")
print("rewrote %d" % rewrite(), flush=True)
open(work + "/rewritten", "w").write("1")
print("reply %r" % c.recv(16), flush=True)
EOS

N=64
start_bg victim smcr "$PY" "$WORK/victim.py" "$TEST_ADDR" "$PORT" "$WORK" "$N"
victim=$LAST_PID
wait_listen "$PORT" "$victim" || finish
run_mode smcr setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups \
	timeout 60 "$PY" "$WORK/attack.py" "$TEST_ADDR" "$PORT" "$WORK" "$N" \
	> "$WORK/attack.out" 2> "$WORK/attack.err"
expect_eq "the attacker's exit status" "$?" 0
cat "$WORK/attack.out"
found=$(sed -n 's/^rewrote //p' "$WORK/attack.out")
if [ "${found:-0}" -ge 1 ]; then
	pass "the attacker rewrote its request in a ring it maps ($found copies)"
else
	fail "the attacker found no copy of its request to rewrite: $(cat "$WORK/attack.err")"
fi
stop_bg "$victim" -
cat "$WORK/victim.out"
expect_eq "the server read what it peeked" "$(tail -n 1 "$WORK/victim.out")" same
on_transport "the attacker's connection" 1 "$N"
finish
