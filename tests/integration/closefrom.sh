#!/bin/bash
# closefrom.sh BUILD_DIR - a daemon that closes every descriptor it does not
# know keeps its connection, its files and its idle CPU.  A python server
# under the preload (RLIMIT_NOFILE 1024: libsmcr's own descriptors sit at
# 512 and up) echoes 64 KiB on a connection over $SMCR_TEST_TRANSPORT,
# moves the connection to descriptor 0, closes 3 and up (os.closerange:
# close_range), opens 700 files (their numbers run over libsmcr's), then
# waits 1.5 s in poll with nothing to read, and echoes 4 MiB more.  The
# echoes are byte-exact, every file holds what the server wrote (libsmcr
# wrote nothing into them), the idle poll used little CPU (it does not spin
# on a descriptor closed under it), and the connection stayed on the
# transport.
. "$(dirname "$0")/lib.sh"
PORT=19421
start_smcrd $PORT 64

cat > "$WORK/server.py" <<'EOF'
import os, resource, select, socket, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
addr, port, files = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((addr, port))
s.listen(1)
c, _ = s.accept()
got = b""
while len(got) < 65536:
    got += c.recv(65536 - len(got))
c.sendall(got)
os.dup2(c.fileno(), 0)
os.closerange(3, 1 << 20)
fds = [os.open(f"{files}/f{i}", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600) for i in range(700)]
for i, fd in enumerate(fds):
    os.write(fd, b"file %d\n" % i)
p = select.poll()
p.register(0, select.POLLIN)
before = resource.getrusage(resource.RUSAGE_SELF)
idle = p.poll(1500)
after = resource.getrusage(resource.RUSAGE_SELF)
print("idle poll:", idle, "cpu %.3f" % (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime))
os.write(0, b"R")
while True:
    p.poll()
    d = os.read(0, 65536)
    if not d:
        break
    while d:
        d = d[os.write(0, d):]
bad = [i for i, fd in enumerate(fds) if os.pread(fd, 64, 0) != b"file %d\n" % i]
print("files:", "ok" if not bad else "changed: %s" % bad[:10])
EOF
cat > "$WORK/client.py" <<'EOF'
import os, socket, sys, threading
addr, port = sys.argv[1], int(sys.argv[2])
c = socket.create_connection((addr, port))
first = os.urandom(65536)
c.sendall(first)
got = b""
while len(got) < len(first):
    got += c.recv(65536)
assert c.recv(1) == b"R", "no go-ahead"
data = os.urandom(4 << 20)
back = []
reader = threading.Thread(target=lambda: back.extend(iter(lambda: c.recv(65536), b"")))
reader.start()
c.sendall(data)
c.shutdown(socket.SHUT_WR)
reader.join()
print("echo:", "ok" if got == first and b"".join(back) == data else "differs")
EOF
mkdir "$WORK/files"
start_bg server smcr "$PY" "$WORK/server.py" "$TEST_ADDR" "$PORT" "$WORK/files"
server=$LAST_PID
wait_listen "$PORT" "$server" || finish
run_mode smcr timeout 60 "$PY" "$WORK/client.py" "$TEST_ADDR" "$PORT" > "$WORK/client.out" 2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
expect_eq "echo before and after closerange" "$(cat "$WORK/client.out")" "echo: ok"
stop_bg "$server" - 20
expect_eq "server exit status" "$?" 0
expect_eq "the server's 700 files" "$(sed -n 's/^files: //p' "$WORK/server.out")" ok
cpu=$(sed -n 's/^idle poll: \[\] cpu //p' "$WORK/server.out")
if [ -n "$cpu" ] && awk -v c="$cpu" 'BEGIN { exit !(c < 0.5) }'; then
	pass "a 1.5 s idle poll used ${cpu} s of CPU"
else
	fail "idle poll: '$(grep '^idle poll' "$WORK/server.out")' (expected no events, under 0.5 s of CPU)"
fi
on_transport "closerange daemon" 1 $((65536 + (4 << 20)))
finish
