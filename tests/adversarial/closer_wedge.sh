#!/bin/bash
# closer_wedge.sh BUILD_DIR - an unprivileged user tries to wedge smcrd's
# closing of the descriptors its clients send, and to fill smcrd's
# descriptor table with them (attack.py, below):
#  1. It makes a TCP socket whose close lingers: SO_LINGER {1, 3600}, its
#     send buffer full and its peer's window shut (the peer never reads and
#     has a tiny receive buffer).  It hands smcrd the last references to it:
#     253 copies in one malformed request.
#  2. Then 89 more malformed requests on as many connections, each with 253
#     descriptors (90 x 253 = 22770, more than smcrd may open here).
#  3. It waits for smcrd to hang up on each of the 90 connections: a client
#     that sends a malformed request is disconnected.
# With the lingering socket still lingering (the attacker stays up, its peer
# unread), smcrd must still serve:
#  - its open descriptors never passed 4096 + 253 + 64: the descriptors it
#    closes wait at most 4096 at a time (smcrd/closer.c) plus one request's,
#    and smcrd itself holds a few dozen (sampled through the attack);
#  - they come back to a few dozen once the attack is over;
#  - `smcrctl status` answers;
#  - a new preloaded client and server (socat) get their connections over
#    $SMCR_TEST_TRANSPORT, with no fallback (none for NODAEMON).
. "$(dirname "$0")/../integration/lib.sh" "$1"
need socat setpriv
LINGER_PORT=24200
PORT=24201
CONNS=4
BOUND=$((4096 + 253 + 64))
start_smcrd "$PORT" 32
test_user smcr-attacker
as_attacker=(setpriv --reuid="$TEST_UID" --regid="$TEST_UID" --clear-groups)
chmod 755 "$WORK"
fds() { ls "/proc/$SMCRD_PID/fd" 2>/dev/null | wc -l; }
before=$(fds)

cat > "$WORK/attack.py" <<'EOS'
import errno, os, resource, select, signal, socket, sys, time
from lingering import lingering_socket
sock_path, port, requests = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
SCM_MAX_FD = 253
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))   # descriptors in flight count here

# A TCP socket whose close lingers for an hour: data it cannot send, to a
# peer whose window is shut.
lst = socket.socket()
lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lst.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
lst.bind(("127.0.0.1", port))
lst.listen(1)
lingering = socket.create_connection(("127.0.0.1", port))
peer, _ = lst.accept()          # never read, open until the test ends
lst.close()
lingering = lingering_socket(lingering, 3600)

def malformed(fd):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.connect(sock_path)
    for _ in range(3000):       # while smcrd reads nothing, ours in flight hit our limit
        try:
            socket.send_fds(c, [b"not a request"], [fd] * SCM_MAX_FD)
            return c
        except OSError as e:
            if e.errno != errno.ETOOMANYREFS:
                raise
            time.sleep(0.01)
    raise OSError(errno.ETOOMANYREFS, "smcrd read nothing for 30 s")

# The last references to it go to smcrd: our own copy is dropped by a
# process that exits, whose close never lingers.
child = os.fork()
if child == 0:
    conns = [malformed(lingering.fileno())]
    os._exit(0)
lingering.close()
_, status = os.waitpid(child, 0)
conns = []
if status == 0:
    junk = os.open("/dev/null", os.O_RDONLY)
    for _ in range(requests - 1):
        try:
            conns.append(malformed(junk))
        except OSError as e:
            print("sending:", e, flush=True)
            break
print("requests sent:", len(conns) + (status == 0), flush=True)

# Each connection must end: smcrd hangs up on a malformed request.
poller = select.poll()
for c in conns:
    poller.register(c, select.POLLIN)
left = len(conns)
while left and (ready := poller.poll(30000)):
    for fd, _ in ready:
        poller.unregister(fd)
        left -= 1
print("connections smcrd hung up on:", len(conns) - left, "of", len(conns), flush=True)
print("done", flush=True)
signal.pause()                  # the lingering socket lingers until the test ends
EOS

start_bg attacker plain env PYTHONPATH="$SRC/tests/integration" "${as_attacker[@]}" "$PY" "$WORK/attack.py" \
	"$SMCR_RUNDIR/smcrd.sock" "$LINGER_PORT" 90
attacker=$LAST_PID

# smcrd's descriptors while the attack goes on (up to 60 s against a hang)
most=$before
for _ in $(seq 1200); do
	n=$(fds)
	[ "$n" -gt "$most" ] && most=$n
	grep -qs '^done' "$WORK/attacker.out" && break
	kill -0 "$attacker" 2> /dev/null || break
	sleep 0.05
done
grep -qs '^done' "$WORK/attacker.out" || fail "the attack did not end: $(cat "$WORK/attacker.out" "$WORK/attacker.err")"
expect_eq "malformed requests sent" "$(sed -n 's/^requests sent: //p' "$WORK/attacker.out")" 90
expect_eq "connections smcrd hung up on" \
	"$(sed -n 's/^connections smcrd hung up on: //p' "$WORK/attacker.out")" "89 of 89"
if [ "$most" -le "$BOUND" ]; then
	pass "smcrd's open descriptors: at most $most during the attack (bound $BOUND, $before before)"
else
	fail "smcrd's open descriptors: $most during the attack, more than $BOUND ($before before)"
fi

# With the socket still lingering: smcrd has closed what it was given and serves.
if until_true eval '[ "$(fds)" -le $((before + 8)) ]'; then
	pass "smcrd's open descriptors after the attack: $(fds) ($before before)"
else
	fail "smcrd holds $(fds) descriptors after the attack, $before before"
fi
victim_unharmed "after the attack" "$PORT" "$CONNS" 4096
stop_bg "$attacker"
finish
