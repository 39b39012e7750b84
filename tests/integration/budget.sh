#!/bin/bash
# budget.sh BUILD_DIR - a full budget loses nothing: a python client under
# the preload opens CONNS connections to a python echo server under the
# preload (echo_server.py), one after the other, each echoing 64 KiB of random bytes before
# the next is opened, and holds them all open.  Exactly as many go over
# $SMCR_TEST_TRANSPORT (lib.sh) as the budget holds, the others fall back
# to TCP, naming the budget, and every echo is byte-exact.  Two budgets:
#  - smcrd's max_memory at 2 MiB, which holds both ends' buffers (the RMB
#    with its control page, and over rdma the staging buffer each end
#    writes from) of so many connections; the others fall back with MEM.
#    The RMB size is what libsmcr gave (smcrctl stats), not assumed.
#    Memory in use is what those hold, no more (a fallen-back end gives
#    its buffer back at once); once the client closes them all (the server
#    still up), everything is back, and a new connection goes over the
#    transport again.
#  - smcrd's open-file limit at OFFER_NOFILE, half of which may hold offers
#    (one per connection end, four descriptors each: shm_broker.c); the
#    others fall back with SMCRDFULL at the end refused.  Here the server
#    hands each connection to a worker process (SCM_RIGHTS) before any I/O,
#    and the offers are odd in number: at the first connection that does
#    not fit, the client's offer is taken and the server's, made as it hands
#    the connection over, is refused.  The server must then decline before
#    the connection goes, or the worker, finding no offer, would read the
#    client's CLC as data.
. "$(dirname "$0")/lib.sh"
CONNS=5
LIMIT=$((2 * 1024 * 1024))

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

# fill NAME FIT REASON: the server and the client's CONNS connections, of
# which $(FIT) go over the transport (both ends' buffers within the budget;
# FIT names a function, which may use PER_END, an end's buffers) and the
# others fall back, one end at least with REASON; memory in use is what
# those hold.  Leaves the client holding them open (the fifo $WORK/hold
# closes them: close_all) and the server running ($SRV).
fill() {
	local name=$1 fit reason=$3 n rmb
	start_bg server smcr "$PY" "$SRC/tests/integration/echo_server.py" "$TEST_ADDR" 19401 \
		"${SERVER_MODE[@]}"
	SRV=$LAST_PID
	wait_listen 19401 "$SRV"
	rm -f "$WORK/hold"
	mkfifo "$WORK/hold"
	(exec 3<>"$WORK/hold"; LD_PRELOAD=$PRELOAD SMCR_LOG=debug timeout 60 "$PY" \
		"$WORK/client.py" "$TEST_ADDR" 19401 "$CONNS" <&3 > "$WORK/client.out" \
		2> "$WORK/client.err") &
	CLI=$!
	for _ in $(seq 300); do grep -q "all open" "$WORK/client.out" 2>/dev/null && break; sleep 0.1; done
	expect_eq "$name: echoes byte-exact" "$(grep -c 'echo exact' "$WORK/client.out")" "$CONNS"
	# What one end holds: the RMB with its control page (and over rdma the
	# staging buffer, of the RMB's size).
	rmb=$(rmb_size) || { fail "smcrctl stats --json: no $TEST_TRANSPORT RMB"; finish; }
	PER_END=$((4096 + rmb))
	[ "$TEST_TRANSPORT" = rdma ] && PER_END=$((PER_END + rmb))
	fit=$($2)
	expect_eq "$name: connections on $TEST_TRANSPORT (both ends' buffers fit $fit)" \
		"$(transport_counter clients) $(transport_counter servers)" "$fit $fit"
	# exactly the connections on the transport hold memory: a fallen-back
	# end's buffer goes back at once, whichever end was refused
	expect_eq "$name: memory in use" "$(stats_counter in_use)" $((fit * 2 * PER_END))
	n=$(fallback_count "$reason")
	if [ "$n" -ge $((CONNS - fit)) ] 2>/dev/null; then
		pass "$name: $n connection ends fell back with $reason ($((CONNS - fit)) connections did not fit)"
	else
		fail "$name: ${n:-no} connection ends fell back with $reason; $((CONNS - fit)) connections did not fit"
	fi
	expect_fallbacks "$name" "$(stats_counter connections.fallbacks)" $((2 * (CONNS - fit)))
}

# close_all NAME: the client closes its connections and exits; all memory
# comes back.  The fifo opened read-write: a client already gone (it failed)
# leaves no reader, and a write-only open would wait for one.
close_all() {
	echo 1<> "$WORK/hold"
	wait "$CLI"
	expect_eq "$1: client exit status" "$?" 0
	memory_back "$1: memory in use once the client closed them (server still up)"
}

fit_memory() { echo $((LIMIT / (2 * PER_END))); }
SERVER_MODE=()
start_smcrd 19401 2
allow_log "no rdma for the connection: Cannot allocate memory"     # max_memory reached, on purpose
fill "max_memory $LIMIT" fit_memory MEM
close_all "max_memory"
LD_PRELOAD=$PRELOAD timeout 60 "$PY" "$WORK/client.py" "$TEST_ADDR" 19401 1 < /dev/null > "$WORK/again.out" 2>&1
expect_eq "a new connection: echo" "$(grep -c 'echo exact' "$WORK/again.out")" 1
expect_eq "a new connection on $TEST_TRANSPORT" "$(transport_counter clients)" $(($(fit_memory) + 1))
stop_bg "$SRV"
stop_bg "$SMCRD_PID"

# smcrd with OFFER_NOFILE descriptors: OFFER_NOFILE / 2 / 4 offers (13),
# two per connection; the other half is more than smcrd needs for itself
# (about 30).  The server passes each connection to its worker.
OFFER_NOFILE=104
SERVER_MODE=(pass)
CONNS=8
fit_offers() { echo $((OFFER_NOFILE / 2 / 4 / 2)); }
SMCRD=(prlimit --nofile=$OFFER_NOFILE:$OFFER_NOFILE "${SMCRD[@]}")
start_smcrd 19401 1024
fill "open-file limit $OFFER_NOFILE" fit_offers SMCRDFULL
close_all "open-file limit"
finish
