#!/bin/bash
# handover_uid.sh BUILD_DIR - a root acceptor hands used connections to
# workers of another uid over SCM_RIGHTS, as privilege-separated servers do,
# and one of those workers is hostile.  Everything runs under the preload:
# the client (client.py), the acceptor (root) and two workers running as a
# user this test creates.  Each connection is used before it changes hands:
# the acceptor reads the client's hello and answers it.
#  1. The honest worker echoes 1 MiB on each of 6 connections: byte-exact,
#     over $SMCR_TEST_TRANSPORT.
#  2. The acceptor keeps 4 more connections of its own, open across step 3.
#  3. The hostile worker is handed 3 connections, and the acceptor keeps its
#     copies.  It uses each, then rewrites every page it can map (every
#     shared mapping of its process, and every memfd among its descriptors
#     mapped anew), with all-ones, zeros, 0x7f and random bytes.  Then the
#     acceptor sends on its copies, and neither it nor the client may crash
#     or hang (errors are allowed: the connection is the hostile worker's
#     to break).
#  4. The acceptor's own 4 connections then echo 1 MiB each: byte-exact.
# The acceptor and the client must exit 0; a crash would show here, and a
# hang as a timeout.  Which transport carried the bytes is read from the
# acceptor's and the client's own exit lines: smcrd's host totals include
# the hostile worker's statistics region, which it rewrote too (a process
# can claim any traffic of its own there).
. "$(dirname "$0")/lib.sh"
PORT=19500
HONEST=6 OWN=4 HOSTILE=3 BYTES=$((1 << 20))
start_smcrd "$PORT" 64
test_user smcr-worker
worker_user=$TEST_UID
chmod 755 "$WORK"
chmod 1777 "$SAN_DIR"                   # the workers' sanitizer reports

cp "$SRC/tests/integration/used_conns.py" "$WORK/"
cat > "$WORK/acceptor.py" <<'EOS'
import os, socket, sys
import used_conns                # from tests/integration, beside this script
addr, port, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
honest_n, own_n, hostile_n, size = map(int, sys.argv[4:8])
def unix_listener(name):
    u = socket.socket(socket.AF_UNIX)
    u.bind(f"{work}/{name}")
    os.chmod(f"{work}/{name}", 0o777)
    u.listen(1)
    return u
lst = socket.socket()
lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lst.bind((addr, port))
lst.listen(64)
honest_l, hostile_l = unix_listener("honest.sock"), unix_listener("hostile.sock")
print("ready", flush=True)
honest, _ = honest_l.accept()
hostile, _ = hostile_l.accept()
def used():                     # a connection the acceptor has read and answered
    return used_conns.accepted(lst)
for _ in range(honest_n):
    c = used()
    socket.send_fds(honest, [b"c"], [c.fileno()])
    c.close()
own = [used() for _ in range(own_n)]
kept = []
for _ in range(hostile_n):
    c = used()
    socket.send_fds(hostile, [b"c"], [c.fileno()])
    kept.append(c)
    assert hostile.recv(1) == b"d"      # it has used it and rewritten every page
sent = failed = 0
for c in kept:                  # the acceptor goes on with its copies
    c.settimeout(3)                 # a forged cursor may say the peer is full
    try:
        c.sendall(b"after the attack" * 4096)
        sent += 1
    except OSError:
        failed += 1
    c.close()
print(f"copies after the attack: {sent + failed} used, none crashed", flush=True)
print(f"(of those, {sent} sends went through and {failed} failed or timed out)", flush=True)
for c in own:                   # then its own connections echo
    used_conns.echo_after_go(c, size)
    c.close()
honest.close()
hostile.close()
print("done", flush=True)
EOS

cat > "$WORK/worker.py" <<'EOS'
import ctypes, mmap, os, random, socket, sys
work, role = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
PATTERNS = [b"\xff", b"\x00", b"\x7f", None]      # None: random bytes
def fill(write, length, pattern):
    write(pattern * length if pattern else random.randbytes(length))
def rewrite_mappings(pattern):
    n = 0
    for line in open("/proc/self/maps").read().splitlines():
        f = line.split()
        if f[1][3] != "s":
            continue                    # private: the process's own memory
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        if f[1][1] != "w" and libc.mprotect(lo, hi - lo, 3) != 0:
            continue                    # PROT_READ|PROT_WRITE refused
        fill(lambda b: ctypes.memmove(lo, b, len(b)), hi - lo, pattern)
        n += 1
    return n
def rewrite_memfds(pattern):
    n = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            if not os.readlink(f"/proc/self/fd/{name}").startswith("/memfd:"):
                continue
            m = mmap.mmap(fd, os.fstat(fd).st_size)
        except (OSError, ValueError):
            continue                    # sealed, read-only or gone
        fill(lambda b: m.__setitem__(slice(0, len(b)), b), len(m), pattern)
        m.close()
        n += 1
    return n
def attack():
    # in a child: what it rewrites is shared with this process and its peers,
    # and this process must live on to say it is done
    pid = os.fork()
    if pid == 0:
        for pattern in PATTERNS:
            memfds, mappings = rewrite_memfds(pattern), rewrite_mappings(pattern)
        print(f"rewrote {memfds} memfds, {mappings} shared mappings", flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
u = socket.socket(socket.AF_UNIX)
u.connect(f"{work}/{role}.sock")
conns = []
while True:
    msg, fds, _, _ = socket.recv_fds(u, 1, 1)
    if not fds:
        break
    c = socket.socket(fileno=fds[0])
    if role == "honest":
        while (piece := c.recv(65536)):
            c.sendall(piece)
        c.close()
        continue
    c.settimeout(10)
    try:
        c.recv(4096)                    # libsmcr has it mapped now
    except OSError:
        pass
    attack()
    conns.append(c)
    u.sendall(b"d")
EOS

cat > "$WORK/client.py" <<'EOS'
import sys
import used_conns
addr, port = sys.argv[1], int(sys.argv[2])
honest_n, own_n, hostile_n, size = map(int, sys.argv[3:7])
def used():
    return used_conns.connected(addr, port)
def echo(s):
    same = used_conns.echoes(s, size)
    s.close()
    return same
print("honest worker echoes the same:", sum(echo(used()) for _ in range(honest_n)), flush=True)
own = [used() for _ in range(own_n)]
hostile = []
for _ in range(hostile_n):          # what comes back on them is the hostile worker's to break
    s = used()
    s.settimeout(30)
    try:
        s.sendall(b"x" * 65536)
    except OSError:
        pass
    hostile.append(s)
print("the acceptor's own connections echo the same:",
      sum(used_conns.echoes_after_go(s, size) for s in own), flush=True)
for s in hostile:
    s.close()
EOS

start_bg acceptor smcr "$PY" "$WORK/acceptor.py" "$TEST_ADDR" "$PORT" "$WORK" $HONEST $OWN $HOSTILE $BYTES
acceptor=$LAST_PID
wait_for "$WORK/acceptor.out" ready || { fail "the acceptor did not start"; finish; }
as_worker=(setpriv --reuid="$worker_user" --regid="$worker_user" --clear-groups)
start_bg honest smcr "${as_worker[@]}" "$PY" "$WORK/worker.py" "$WORK" honest
honest=$LAST_PID
start_bg hostile smcr "${as_worker[@]}" "$PY" "$WORK/worker.py" "$WORK" hostile
hostile=$LAST_PID
run_mode smcr timeout 120 "$PY" "$WORK/client.py" "$TEST_ADDR" "$PORT" $HONEST $OWN $HOSTILE $BYTES \
	> "$WORK/client.out" 2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
expect_eq "honest worker (uid $worker_user)" "$(sed -n 1p "$WORK/client.out")" \
	"honest worker echoes the same: $HONEST"
expect_eq "the acceptor's connections after the attack" "$(sed -n 2p "$WORK/client.out")" \
	"the acceptor's own connections echo the same: $OWN"
until_true grep -qs done "$WORK/acceptor.out"
expect_eq "the acceptor's copies of the hostile worker's connections" \
	"$(grep copies "$WORK/acceptor.out")" "copies after the attack: $HOSTILE used, none crashed"
stop_bg "$acceptor" -
expect_eq "acceptor exit status" "$?" 0
grep "^(of those" "$WORK/acceptor.out"
stop_bg "$honest" -
expect_eq "honest worker exit status" "$?" 0
stop_bg "$hostile" - 30        # it exits once the acceptor hung up on it
expect_eq "the hostile worker rewrote shared mappings, each time" \
	"$(grep -cE '^rewrote [0-9]+ memfds, [1-9][0-9]* shared mappings' "$WORK/hostile.out")" "$HOSTILE"
tail -n 1 "$WORK/hostile.out"
# own_line PROG FILE ROLE: PROG's exit line in FILE, for ROLE's connections over the transport
own_line() {
	grep -E "^libsmcr\[[0-9]+\]: info: $1: " "$2" | tail -n 1 |
		grep -oE "; $TEST_TRANSPORT: .*|; fallback.*" | cut -d ';' -f 2 | sed 's/^ //'
}
conns=$((HONEST + OWN + HOSTILE))
expect_eq "client's connections, from its exit line" \
	"$(own_line python3 "$WORK/client.err" | grep -oE "^$TEST_TRANSPORT: [0-9]+ client, [0-9]+ server")" \
	"$TEST_TRANSPORT: $conns client, 0 server"
expect_eq "acceptor's connections, from its exit line" \
	"$(own_line python3 "$WORK/acceptor.err" | grep -oE "^$TEST_TRANSPORT: [0-9]+ client, [0-9]+ server")" \
	"$TEST_TRANSPORT: 0 client, $conns server"
expect_eq "fallbacks in the client's and the acceptor's exit lines" \
	"$(grep -hE '^libsmcr.*: info: python3: .*fallback' "$WORK/client.err" "$WORK/acceptor.err" | wc -l)" 0
finish
