#!/bin/bash
# budget.sh BUILD_DIR - a full max_memory loses nothing: with smcrd's
# max_memory at 2 MiB, a python client under the preload opens CONNS
# connections to a python echo server under the preload, one after the
# other, each echoing 64 KiB of random bytes before the next is opened, and
# holds them all open.  Exactly as many go over $SMCR_TEST_TRANSPORT
# (lib.sh) as the budget holds - both ends' buffers: the RMB with its
# control page, and over rdma the staging buffer each end writes from -
# the others fall back to TCP with MEM, and every echo is byte-exact.  The
# RMB size is what libsmcr gave (smcrctl stats), not assumed.
# Memory in use is what those hold, no more (a fallen-back end gives its
# buffer back at once); once the client closes them all
# (the server still up), everything is back, and a new connection goes over
# the transport again.
. "$(dirname "$0")/lib.sh"
start_smcrd 19401 2
allow_log "no rdma for the connection: Cannot allocate memory"     # max_memory reached, on purpose
CONNS=5
LIMIT=$((2 * 1024 * 1024))

cat > "$WORK/server.py" <<'EOF'
import socket, sys, threading
def echo(c):
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
    c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=echo, args=(c,), daemon=True).start()
EOF
cat > "$WORK/client.py" <<'EOF'
import os, socket, sys
addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conns = []
for i in range(n):
    c = socket.create_connection((addr, port))
    data = os.urandom(65536)
    c.sendall(data)
    got = b""
    while len(got) < len(data):
        d = c.recv(len(data) - len(got))
        if not d:
            break
        got += d
    print("connection %d: echo %s" % (i, "exact" if got == data else "DIFFERS (%d bytes)" % len(got)),
          flush=True)
    conns.append(c)
print("all open", flush=True)
sys.stdin.readline()            # until the test has looked
for c in conns:
    c.close()
EOF

start_bg server smcr "$PY" "$WORK/server.py" "$TEST_ADDR" 19401
srv=$LAST_PID
wait_listen 19401 "$srv"
mkfifo "$WORK/hold"
(exec 3<>"$WORK/hold"; LD_PRELOAD=$PRELOAD SMCR_LOG=debug timeout 60 "$PY" "$WORK/client.py" \
	"$TEST_ADDR" 19401 "$CONNS" <&3 > "$WORK/client.out" 2> "$WORK/client.err") &
cli=$!
for _ in $(seq 300); do grep -q "all open" "$WORK/client.out" 2>/dev/null && break; sleep 0.1; done
expect_eq "echoes byte-exact" "$(grep -c 'echo exact' "$WORK/client.out")" "$CONNS"
# What one end holds: the RMB with its control page (and over rdma the
# staging buffer, of the RMB's size); how many connections' two ends fit.
rmb=$(rmb_size) || { fail "smcrctl stats --json: no $TEST_TRANSPORT RMB"; finish; }
PER_END=$((4096 + rmb))
[ "$TEST_TRANSPORT" = rdma ] && PER_END=$((PER_END + rmb))
FIT=$((LIMIT / (2 * PER_END)))
# exactly the connections on the transport hold memory: a fallen-back
# end's buffer goes back at once, whichever end was refused
expect_eq "memory in use (max_memory $LIMIT)" "$(stats_counter in_use)" $((FIT * 2 * PER_END))
expect_eq "connections on $TEST_TRANSPORT (both ends' buffers fit $FIT)" \
	"$(transport_counter clients) $(transport_counter servers)" "$FIT $FIT"
# each end of the others falls back with MEM (or because its peer did)
mem=$(fallback_count MEM)
if [ "$mem" -ge $((CONNS - FIT)) ] 2>/dev/null; then
	pass "$mem connection ends fell back with MEM ($((CONNS - FIT)) connections did not fit)"
else
	fail "${mem:-no} connection ends fell back with MEM; $((CONNS - FIT)) connections did not fit"
fi
expect_eq "fallbacks" "$(stats_counter connections.fallbacks)" $((2 * (CONNS - FIT)))

echo > "$WORK/hold"
wait "$cli"
expect_eq "client exit status" "$?" 0
memory_back "memory in use once the client closed them (server still up)"

LD_PRELOAD=$PRELOAD timeout 60 "$PY" "$WORK/client.py" "$TEST_ADDR" 19401 1 < /dev/null > "$WORK/again.out" 2>&1
expect_eq "a new connection: echo" "$(grep -c 'echo exact' "$WORK/again.out")" 1
expect_eq "a new connection on $TEST_TRANSPORT" "$(transport_counter clients)" $((FIT + 1))
finish
