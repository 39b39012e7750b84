#!/bin/bash
# wake_block.sh BUILD_DIR - a same-host peer of a preloaded root server
# (redis-server) turns the wake-up descriptors libsmcr handed it against
# the server.  The peer is an unprivileged user's preloaded program
# (attack.py, below) with one connection to the server over shared memory.
# It takes every descriptor its libsmcr holds that could carry wake-ups
# (eventfds, unix stream sockets: its own and the server's) and:
#  1. makes each blocking, and keeps each eventfd's counter full (a write of
#     one more would block) and each socket's buffer full, from threads of
#     its own, while it sends requests and keeps asking the server to wake
#     it that way (the `armed` word of every shared-memory control page it
#     maps, set through /proc/self/mem);
#  2. then shuts each socket down for writing: a channel that can never be
#     read empty again (libsmcr ends a connection whose channel it reads to
#     that end: test_fdtable's wake_channel_never_blocks).
# Through both, the server must answer a plain client and a preloaded one
# (whose connection goes over shm) at once, as it does after the attacker
# is killed.
. "$(dirname "$0")/../integration/lib.sh" "$1"
need redis-server redis-cli setpriv
PORT=24210
start_smcrd "$PORT" 32
test_user smcr-waker
chmod 755 "$WORK"

cat > "$WORK/attack.py" <<'EOS'
import os, select, socket, stat, sys, threading, time

addr, port = sys.argv[1], int(sys.argv[2])
FULL = (1 << 64) - 2                    # an eventfd's counter at its highest


def say(what):
    print(what, flush=True)


def ping(conn):
    conn.sendall(b"PING\r\n")
    return conn.recv(64)


def wake_descriptors(conn):
    """Our libsmcr's descriptors that carry wake-ups: eventfds, unix stream sockets."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd <= 2 or fd == conn.fileno():
            continue
        try:
            link = os.readlink("/proc/self/fd/%d" % fd)
        except OSError:
            continue
        if link == "anon_inode:[eventfd]":
            found.append(("eventfd", fd))
        elif link.startswith("socket:"):
            s = socket.socket(fileno=os.dup(fd))
            if s.family == socket.AF_UNIX and s.type == socket.SOCK_STREAM:
                found.append(("socket", s))
            else:
                s.detach()          # a copy left open: the attacker does not care
    return found


def keep_eventfd_full(fd):
    os.set_blocking(fd, True)
    p = select.poll()                   # our libsmcr's descriptors are beyond select's
    p.register(fd, select.POLLIN)
    while True:
        if p.poll(10):
            os.read(fd, 8)
        os.write(fd, FULL.to_bytes(8, "little"))


def keep_socket_full(s):
    s.setblocking(True)
    while True:
        try:
            s.send(b"w" * 65536)
        except OSError:
            return


def start(fn, *args):
    threading.Thread(target=fn, args=args, daemon=True).start()


conn = socket.create_connection((addr, port))
say("first answer %r" % ping(conn))
wake = wake_descriptors(conn)
say("wake-up descriptors: %d eventfds, %d unix stream sockets" %
    (sum(k == "eventfd" for k, _ in wake), sum(k == "socket" for k, _ in wake)))
for kind, d in wake:
    start(keep_eventfd_full if kind == "eventfd" else keep_socket_full, d)


ARMED = 260                             # smc_shm.c's struct shm_ctl: the word's offset


def keep_armed():
    pages = [int(line.split("-")[0], 16) for line in open("/proc/self/maps")
             if "smcr-rmb" in line]
    with open("/proc/self/mem", "r+b", buffering=0) as mem:
        while True:
            for page in pages:
                mem.seek(page + ARMED)
                mem.write((1).to_bytes(4, "little"))
            time.sleep(0.001)


def keep_asking():
    while True:
        ping(conn)


start(keep_armed)
start(keep_asking)
say("attacking")
sys.stdin.readline()
for kind, d in wake:
    if kind == "socket":
        try:
            d.shutdown(socket.SHUT_WR)
        except OSError:
            pass
say("shut")
sys.stdin.readline()
EOS

# answers NAME: the server answers a plain client and a preloaded one.
answers() {
	local got
	got=$(timeout 5 redis-cli -h "$TEST_ADDR" -p "$PORT" ping 2>&1)
	expect_eq "$1: a plain client's ping" "$got" PONG
	got=$(LD_PRELOAD=$PRELOAD timeout 5 redis-cli -h "$TEST_ADDR" -p "$PORT" ping 2>> "$WORK/cli.err")
	expect_eq "$1: a preloaded client's ping" "$got" PONG
}

start_bg victim smcr redis-server --port "$PORT" --bind "$TEST_ADDR" --save '' --appendonly no
victim=$LAST_PID
wait_port "$PORT" "$victim" || finish
answers "before the attack"
# its stdin: a fifo opened both ways here, so that neither open waits
mkfifo "$WORK/attack.in"
exec 7<> "$WORK/attack.in"
start_bg attack smcr setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups \
	"$PY" "$WORK/attack.py" "$TEST_ADDR" "$PORT" <&7
attacker=$LAST_PID
if wait_for "$WORK/attack.out" '^attacking'; then
	grep '^wake-up descriptors' "$WORK/attack.out"
	sleep 2                 # the attack's threads at work
	answers "while the peer keeps our wake-ups full"
	echo >&7
	wait_for "$WORK/attack.out" '^shut' || fail "the attacker did not shut its channels"
	sleep 1
	answers "after the peer shut our wake-up channel"
else
	fail "the attack did not start: $(tail -n 3 "$WORK/attack.out" "$WORK/attack.err")"
fi
kill -9 "$attacker"
wait "$attacker" 2> /dev/null
exec 7>&-
answers "after the attacker was killed"
on_transport "the preloaded clients" 3 20 -
allow_log "the peer shut our wake-up channel"
stop_bg "$victim"
finish
