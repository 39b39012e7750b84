#!/bin/bash
# forged_leave.sh BUILD_DIR - a peer of another uid forges LEAVE, the
# message by which an end leaves SMC for TCP mid-stream (docs/PROTOCOL.md
# section 10): bytes it writes on the TCP stream of a connection on shared
# memory behind its own libsmcr's back (a raw write system call).  A root
# echo server (preloaded, threaded) must reset that one connection, never
# read or send beyond its buffers, and serve on.  Four forgeries, each on a
# connection that has echoed 64 KiB first:
#  1. "junk": 28 bytes that are not LEAVE;
#  2. "cons": LEAVE whose consumer cursor lies a thousand rings beyond what
#     the server wrote (a resend from there would read outside its ring);
#  3. "prod": LEAVE whose producer cursor lies beyond what the server's
#     buffer holds;
#  4. "cut": the first 10 bytes of LEAVE, and no more.  The server must
#     not wait for the rest (it held the connection's lock for up to 6 s,
#     and then reset it): a peer that stops there is a TCP peer that
#     stopped sending.  The connection must still be open 8 s later, and
#     end once the forger ends its side.
# Each time the forger's connection must end (a reset, or its end), and the
# server must log why it reset the first three.  Then a root client and server echo byte-exact over
# shared memory (victim_unharmed).
. "$(dirname "$0")/../integration/lib.sh" "$1"
PORT=24720
start_smcrd "$PORT-$((PORT + 1))" 64
test_user smcr-leaver
chmod 755 "$WORK"
allow_log "cannot carry the connection on TCP after the peer left"

cat > "$WORK/forger.py" <<'EOS'
import ctypes, errno, os, socket, struct, sys, time
addr, port, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
libc = ctypes.CDLL(None, use_errno=True)
SYS_write, SYS_recvfrom = 1, 45
MSG_PEEK, MSG_DONTWAIT = 2, 0x40

def leave(cons_wrap, prod_wrap):
    return (b"\xe2LVE" + bytes([1, 28, 0, 0]) + struct.pack(">I", 0x03000400) +
            struct.pack(">HHI", 0, cons_wrap, 0) + struct.pack(">HHI", 0, prod_wrap, 0))

forged = {"junk": b"\x00" * 28, "cons": leave(1000, 0), "prod": leave(0, 1000),
          "cut": leave(0, 0)[:10]}[kind]
s = socket.create_connection((addr, port))
s.settimeout(30)
data = os.urandom(65536)
s.sendall(data)
got = b""
while len(got) < len(data):
    got += s.recv(65536)
assert got == data, "the echo before the forgery differs"
# behind libsmcr's back: the raw system call, on the TCP socket itself
if libc.syscall(SYS_write, s.fileno(), forged, len(forged)) != len(forged):
    sys.exit("raw write failed: errno %d" % ctypes.get_errno())
if kind == "cut":
    time.sleep(8)                # beyond the 6 s the server once waited for the rest
    # the TCP stream itself, behind libsmcr's back: the server's reset shows there
    buf = ctypes.create_string_buffer(1)
    n = libc.syscall(SYS_recvfrom, s.fileno(), buf, 1, MSG_PEEK | MSG_DONTWAIT, None, None)
    err = ctypes.get_errno()
    print("cut: " + ("open after 8 s" if n < 0 and err == errno.EAGAIN else
                     "TCP said %d (errno %d) within 8 s" % (n, err)), flush=True)
    s.shutdown(socket.SHUT_WR)
try:
    while s.recv(65536):
        pass
    print(kind + ": ended")
except ConnectionResetError:
    print(kind + ": reset")
except socket.timeout:
    print(kind + ": still open after 30 s")
EOS
chmod 644 "$WORK/forger.py"

start_bg server smcr "$PY" "$SRC/tests/integration/echo_server.py" "$TEST_ADDR" "$PORT"
SERVER=$LAST_PID
wait_listen "$PORT" "$SERVER"
for kind in junk cons prod cut; do
	LD_PRELOAD=$PRELOAD SMCR_LOG=debug timeout 60 setpriv --reuid="$TEST_UID" --regid="$TEST_UID" \
		--clear-groups "$PY" "$WORK/forger.py" "$TEST_ADDR" "$PORT" "$kind" \
		> "$WORK/forger-$kind.out" 2> "$WORK/forger-$kind.err"
	expect_eq "$kind: forger exit status" "$?" 0
	out=$(tail -n 1 "$WORK/forger-$kind.out")
	[ "$kind" != cut ] || expect_eq "cut: the forger's connection, 8 s on" \
		"$(head -n 1 "$WORK/forger-$kind.out")" "cut: open after 8 s"
	case $out in
	"$kind: reset" | "$kind: ended") pass "$kind: the forger's connection ended ($out)" ;;
	*) fail "$kind: the forger's connection: '$out'" ;;
	esac
done
expect_eq "the server reset each connection whose LEAVE it read" \
	"$(grep -c 'cannot carry the connection on TCP after the peer left' "$WORK/server.err")" 3
if kill -0 "$SERVER" 2>/dev/null; then pass "the server lives"; else fail "the server died"; fi
on_transport "forgers" 4 $((4 * 65536)) -
stop_bg "$SERVER"
victim_unharmed "after the forgeries" $((PORT + 1)) 4 65536
finish
