#!/bin/bash
# fallback_calls.sh BUILD_DIR - a connection that fell back to TCP costs
# no system call of libsmcr's per call.  smcrd runs with shm = 0, so a
# preloaded client and server negotiate SMC in the TCP handshake, and the
# CLC exchange then declines (no device): the connection goes on over TCP
# with both processes still preloaded, as every connection of a host with
# no way to share memory does.  The client makes N round trips of 100
# bytes, and opens and closes a file at each (as a web server sends a file
# per request); the server echoes, waiting in select() before each read.
# Both are Python, whose calls per round trip are fixed (a read of 100
# bytes sent at once over loopback takes them whole).  Each runs under
# strace -f -c, preloaded against the preloaded peer and plainly against a
# plain peer, for N1 and then N2 round trips.  What the N2 - N1 round trips
# more cost preloaded may exceed what they cost plainly by under a tenth
# of a call each: what libsmcr does once (its start, its smcrd
# registration, the CLC exchange) falls out of the difference, and a
# system call libsmcr made at each call or each close (a getpid to tell a
# vfork child, a poll of its own before select) would add N2 - N1.  The
# fallback is checked too, with its reasons.  And a process whose
# connections keep falling back stops offering its buffer for them once
# smcrd said no transport can serve them.  Not for the sanitizers'
# builds: ASan's allocator maps memory as the program allocates, and
# LeakSanitizer cannot run under ptrace.  Ports 24790-24791.
. "$(dirname "$0")/lib.sh"
need strace
N1=1000
N2=6000
PORT=24790
PLAIN_PORT=24791

start_smcrd "$PORT" 256
"$BIN/smcrctl" -c "$CONF" set shm=0 > /dev/null || { fail "smcrctl set shm=0"; finish; }

cat > "$WORK/client.py" <<'EOF'
import os, socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
chunk = b"x" * 100
for _ in range(n):
    s.sendall(chunk)
    got = 0
    while got < len(chunk):
        part = s.recv(len(chunk) - got)
        if not part:
            sys.exit("the server closed early")
        got += len(part)
    os.close(os.open("/dev/null", os.O_RDONLY))
s.close()
print("done")
EOF

cat > "$WORK/server.py" <<'EOF'
import select, socket, sys
listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
conn, _ = listener.accept()
while True:
    select.select([conn], [], [])
    data = conn.recv(4096)
    if not data:
        break
    conn.sendall(data)
EOF

# traced NAME MODE CMD...: CMD under strace -f -c (and the preload in mode
# smcr) in the background; the summary goes to $WORK/NAME.strace.
traced() {
	local name=$1 mode=$2; shift 2
	local pre=()
	[ "$mode" = smcr ] && pre=(env "LD_PRELOAD=$PRELOAD" SMCR_LOG=debug)
	start_bg "$name" plain strace -f -c -o "$WORK/$name.strace" "${pre[@]}" "$@"
}

# calls NAME [SYSCALL]: the calls strace counted, in all or of SYSCALL.
calls() {
	awk -v want="${2:-total}" '$NF == want { print ($4 ~ /^[0-9]+$/) ? $4 : $3; f = 1 }
		END { if (!f) print 0 }' "$WORK/$1.strace"
}

# run MODE SERVER_PORT N: the server and the client of one run, NAME-MODE-N.
run() {
	local mode=$1 port=$2 n=$3
	traced "server-$mode-$n" "$mode" "$PY" "$WORK/server.py" "$port"
	local srv=$LAST_PID
	wait_listen "$port" "$srv" || return
	traced "client-$mode-$n" "$mode" "$PY" "$WORK/client.py" "$port" "$n"
	local cli=$LAST_PID
	stop_bg "$cli" - 60
	expect_eq "$mode, $n round trips: client exit status" "$?" 0
	expect_eq "$mode, $n round trips: client finished" "$(cat "$WORK/client-$mode-$n.out")" done
	stop_bg "$srv" - 10     # it ends with its one connection
}

for n in "$N1" "$N2"; do
	run plain "$PLAIN_PORT" "$n"
	run smcr "$PORT" "$n"
done

# the path: negotiated in the handshake at both ends, then declined
expect_eq "SMC negotiated in the handshake (client, server)" \
	"$(stats_counter smc_clients) $(stats_counter smc_servers)" "2 2"
echo "fallback reasons: $(fallback_reasons | tr '\n' ' ')"
expect_fallbacks "both ends of both connections" "$(fallbacks_counted)" 4
expect_eq "connections on shared memory" \
	"$(transport_counter clients shm) $(transport_counter servers shm)" "0 0"

# A process that falls back again and again: once smcrd's reply said
# that no transport it allows can serve the address, its next connections
# (within TRANSPORTS_FRESH_S of that word) decline without an offer, whose
# buffer and round trips would be for nothing.  30 connections in turn,
# each a round trip.  The word comes with any reply of smcrd's, the first
# at the registration as the process starts; one connection in a second
# may still offer, to hear it again.
cat > "$WORK/many.py" <<'EOF'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
for _ in range(n):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"x" * 100)
        got = b""
        while len(got) < 100 and (part := s.recv(100 - len(got))):
            got += part
        if got != b"x" * 100:
            sys.exit("an echo came short: %d bytes" % len(got))
print("done")
EOF
cat > "$WORK/many_server.py" <<'EOF'
import socket, sys
listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
for _ in range(int(sys.argv[2])):
    conn, _ = listener.accept()
    with conn:
        while data := conn.recv(4096):
            conn.sendall(data)
EOF
MANY=30
fallbacks_before=$(fallbacks_counted)
start_bg many_server smcr "$PY" "$WORK/many_server.py" "$PORT" "$MANY"
many_server=$LAST_PID
if wait_listen "$PORT" "$many_server"; then
	run_mode smcr timeout 60 "$PY" "$WORK/many.py" "$PORT" "$MANY" > "$WORK/many.out" 2> "$WORK/many.err"
	expect_eq "$MANY connections in turn: the client" "$?/$(cat "$WORK/many.out")" "0/done"
	stop_bg "$many_server" - 10
	skipped=$(grep -c 'no transport smcr.conf allows serves it: no offer' "$WORK/many.err")
	echo "$MANY connections in turn: $skipped declined without an offer"
	expect_between "connections that declined without an offer" "$skipped" 1 "$MANY"
	expect_fallbacks "$MANY connections in turn, both ends" \
		"$(($(fallbacks_counted) - fallbacks_before))" $((2 * MANY))
	echo "fallback reasons: $(fallback_reasons | tr '\n' ' ')"
fi

more=$((N2 - N1))
for side in client server; do
	plain=$(($(calls "$side-plain-$N2") - $(calls "$side-plain-$N1")))
	smcr=$(($(calls "$side-smcr-$N2") - $(calls "$side-smcr-$N1")))
	echo "$side: $more round trips more cost $plain system calls plain, $smcr preloaded" \
		"(getpid: $(calls "$side-plain-$N2" getpid), $(calls "$side-smcr-$N2" getpid) in $N2)"
	if [ "$plain" -lt $((2 * more)) ]; then
		fail "$side: plainly, $more round trips more cost only $plain calls: strace miscounted"
	elif [ $((smcr - plain)) -lt $((more / 10)) ]; then
		pass "$side: the preload added $((smcr - plain)) system calls to $more round trips (< $((more / 10)))"
	else
		fail "$side: the preload added $((smcr - plain)) system calls to $more round trips (expected < $((more / 10)))"
		diff <(sort -k6 "$WORK/$side-plain-$N2.strace") <(sort -k6 "$WORK/$side-smcr-$N2.strace") | head -20
	fi
done
finish
