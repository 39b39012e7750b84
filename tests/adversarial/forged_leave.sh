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
#  4. "cut": the first 10 bytes of LEAVE, and no more (the server waits
#     for the rest at most the CLC wait, 6 s).
# Each time the forger's connection must end (a reset, or its end), and the
# server must log why.  Then a root client and server echo byte-exact over
# shared memory (victim_unharmed).
. "$(dirname "$0")/../integration/lib.sh" "$1"
PORT=24720
start_smcrd "$PORT-$((PORT + 1))" 64
test_user smcr-leaver
chmod 755 "$WORK"
allow_log "cannot carry the connection on TCP after the peer left"

cat > "$WORK/forger.py" <<'EOS'
import ctypes, os, socket, struct, sys
addr, port, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
libc = ctypes.CDLL(None, use_errno=True)
SYS_write = 1

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
	out=$(cat "$WORK/forger-$kind.out")
	case $out in
	"$kind: reset" | "$kind: ended") pass "$kind: the forger's connection ended ($out)" ;;
	*) fail "$kind: the forger's connection: '$out'" ;;
	esac
done
expect_eq "the server reset each forged connection" \
	"$(grep -c 'cannot carry the connection on TCP after the peer left' "$WORK/server.err")" 4
if kill -0 "$SERVER" 2>/dev/null; then pass "the server lives"; else fail "the server died"; fi
on_transport "forgers" 4 $((4 * 65536)) -
stop_bg "$SERVER"
victim_unharmed "after the forgeries" $((PORT + 1)) 4 65536
finish
