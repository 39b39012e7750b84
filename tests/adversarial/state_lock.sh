#!/bin/bash
# state_lock.sh BUILD_DIR - a worker of another uid, handed used
# connections by a preloaded root acceptor (as privilege-separated servers
# hand them), attacks the lock of each connection's shared state page, the
# page every holder of the socket maps read-write:
#  1. "held": it writes its thread id into the lock's first word, as the C
#     library's robust mutex records its holder, and never lets go.  The
#     acceptor then sends on its copy: the send must end (an error is
#     allowed: the connection is the worker's to break), not wait for ever.
#  2. "unlinked": it keeps rewriting bytes 24-39 of the page, where the C
#     library's robust mutex keeps the pointers that link it into its
#     holder's list (x86-64), while the acceptor sends on its copy: an
#     unlock that follows those pointers writes where the worker chose.
#     The acceptor must not crash.
#  3. The acceptor's own connection then echoes 1 MiB: byte-exact.
# The acceptor exits 0 and prints how each attack ended.
. "$(dirname "$0")/../integration/lib.sh" "$1"
need setpriv
PORT=24660
BYTES=$((1 << 20))
start_smcrd "$PORT" 32
test_user smcr-locker
chmod 755 "$WORK"

cp "$SRC/tests/integration/used_conns.py" "$WORK/"
cat > "$WORK/acceptor.py" <<'EOS'
import os, socket, sys, time
import used_conns                # from tests/integration, beside this script
addr, port, work, size = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
lst = socket.socket()
lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lst.bind((addr, port))
lst.listen(8)
u = socket.socket(socket.AF_UNIX)
u.bind(f"{work}/worker.sock")
os.chmod(f"{work}/worker.sock", 0o777)
u.listen(1)
print("ready", flush=True)
worker, _ = u.accept()
def used():                     # a connection the acceptor has read and answered
    return used_conns.accepted(lst)
def attacked(name, sends):
    c = used()
    socket.send_fds(worker, [name.encode()[:1]], [c.fileno()])
    assert worker.recv(1) == b"a"       # it attacks now, and goes on
    start, outcome = time.monotonic(), "went through"
    try:
        for _ in range(sends):
            c.send(b"x" * 1024)
    except OSError as e:
        outcome = type(e).__name__
    print(f"{name}: the acceptor's sends ended ({outcome})", flush=True)
    print(f"{name}: after {time.monotonic() - start:.1f} s", flush=True)
    return c
kept = [attacked("held", 64), attacked("unlinked", 2000)]
own = used()
used_conns.echo_after_go(own, size)
own.close()
worker.sendall(b"q")
for c in kept:
    c.close()
print("done", flush=True)
EOS

cat > "$WORK/worker.py" <<'EOS'
import ctypes, os, socket, sys, threading
work = sys.argv[1]
def state_pages():              # the shared one-page memfd mappings: connections' state
    pages = set()
    for line in open("/proc/self/maps").read().splitlines():
        f = line.split()
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        if f[1][3] == "s" and hi - lo == 4096 and len(f) > 5 and f[5].startswith("/memfd:"):
            pages.add(lo)
    return pages
def hold(page):
    ctypes.c_uint32.from_address(page).value = threading.get_native_id()
def unlink(page, stop):
    forged = b"\x41" * 16
    while not stop.is_set():
        ctypes.memmove(page + 24, forged, 16)
u = socket.socket(socket.AF_UNIX)
u.connect(f"{work}/worker.sock")
stop, conns = threading.Event(), []
for _ in range(2):
    before = state_pages()
    kind, fds, _, _ = socket.recv_fds(u, 1, 1)
    conns.append(socket.socket(fileno=fds[0]))  # libsmcr has mapped its state
    new = state_pages() - before
    print(f"{kind.decode()}: {len(new)} new state page(s)", flush=True)
    for page in new:
        if kind == b"h":
            hold(page)
        else:
            threading.Thread(target=unlink, args=(page, stop), daemon=True).start()
    u.sendall(b"a")
u.recv(1)
stop.set()
EOS

cat > "$WORK/client.py" <<'EOS'
import sys, threading
import used_conns
addr, port, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def used():
    return used_conns.connected(addr, port)
def drain(s):                   # what comes on an attacked connection is the worker's to break
    s.settimeout(60)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
attacked = [used(), used()]
for s in attacked:
    threading.Thread(target=drain, args=(s,), daemon=True).start()
own = used()
print("the acceptor's own connection echoes the same:", used_conns.echoes_after_go(own, size),
      flush=True)
EOS

start_bg acceptor smcr "$PY" "$WORK/acceptor.py" "$TEST_ADDR" "$PORT" "$WORK" $BYTES
acceptor=$LAST_PID
wait_for "$WORK/acceptor.out" ready || { fail "the acceptor did not start"; finish; }
start_bg worker smcr setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups \
	"$PY" "$WORK/worker.py" "$WORK"
worker=$LAST_PID
run_mode smcr timeout 120 "$PY" "$WORK/client.py" "$TEST_ADDR" "$PORT" $BYTES \
	> "$WORK/client.out" 2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
expect_eq "the acceptor's own connection after the attacks" "$(cat "$WORK/client.out")" \
	"the acceptor's own connection echoes the same: True"
until_true grep -qs done "$WORK/acceptor.out"
expect_eq "the worker found each connection's state page" \
	"$(grep -c ': 1 new state page' "$WORK/worker.out")" 2
expect_eq "held: the acceptor's sends ended" "$(grep -c '^held: the acceptor.s sends ended' \
	"$WORK/acceptor.out")" 1
expect_eq "unlinked: the acceptor's sends ended" "$(grep -c '^unlinked: the acceptor.s sends ended' \
	"$WORK/acceptor.out")" 1
grep -E '^(held|unlinked):' "$WORK/acceptor.out"
stop_bg "$acceptor" -
expect_eq "acceptor exit status" "$?" 0
stop_bg "$worker" -
on_transport "the client's and the acceptor's connections" 3 $((2 * BYTES))
finish
