#!/bin/bash
# chroot_workers.sh BUILD_DIR - a server whose workers confine themselves
# after start, as haproxy's `chroot` and many pre-fork servers do.  A python
# server under the preload listens, then forks two workers, each of which
# chroots into an empty directory (no /proc) and becomes nobody before it
# accepts.  Twenty preloaded python clients, four at a time, each echo
# 256 KiB byte-exact.  libsmcr learnt what it needs at start (its smcrd
# registration, the host tag its CLC messages carry), so every connection
# goes over $SMCR_TEST_TRANSPORT with no fallback.
. "$(dirname "$0")/lib.sh"
PORT=19480
CONNS=20
start_smcrd "$PORT" 64

mkdir -m 755 "$WORK/jail"
cat > "$WORK/server.py" <<'EOS'
import os, signal, socket, sys
addr, port, jail = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((addr, port))
s.listen(16)
workers = []
for w in range(2):
    pid = os.fork()
    if pid == 0:
        os.chroot(jail)
        os.chdir("/")
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
        while True:
            c, _ = s.accept()
            while (piece := c.recv(65536)):
                c.sendall(piece)
            c.close()
    workers.append(pid)
def stop(sig, frame):                   # the test is done: the workers too
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
while True:
    signal.pause()
EOS
start_bg server smcr "$PY" "$WORK/server.py" "$TEST_ADDR" "$PORT" "$WORK/jail"
server=$LAST_PID
wait_listen "$PORT" "$server" || finish
run_mode smcr timeout 120 "$PY" "$(dirname "$0")/echo_clients.py" "$TEST_ADDR" "$PORT" "$CONNS" 4 $((256 << 10)) \
	> "$WORK/client.out" 2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
expect_eq "echoes" "$(cat "$WORK/client.out")" "echoes the same: $CONNS"
on_transport "chrooted workers" "$CONNS" $((CONNS * (256 << 10)))
stop_bg "$server"
expect_eq "server exit status" "$?" 0
finish
