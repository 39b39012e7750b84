#!/bin/bash
# variants: shm
# fork.sh BUILD_DIR - servers that fork after accept: socat with fork and
# EXEC:cat (inetd style: the child relays, its child execs cat) and python3's
# socketserver.ForkingTCPServer echo server; and a pre-forked python server
# (workers forked before any client, each accepting on the parent's socket).
# Eight concurrent socat clients each send a distinct 1 MiB random payload
# and must get it back exactly (sha256), once plainly and once with servers
# and clients under libsmcr.so.  Under the preload: the listening parent's
# libsmcr saw all eight accepts (pre-forked: the workers' did) and moved no
# data itself (a forked child's traffic is the child's), each client counted
# exactly its payload out and back in, and each socat child, which exits
# normally, counted exactly its payload in and out from zero.  (The python
# children leave with os._exit or SIGTERM, so they print no summary.)  On
# $SMCR_TEST_ADDR (lib.sh); with SMCR_TEST_TRANSPORT set, smcrd runs and
# every connection under the preload must go over that transport, no end
# leaving for TCP (on_transport_forked: over RDMA each child makes its own
# link), and over RDMA each client made its device ready before its handshake, so that
# its Proposal is not late (a new process's verbs take seconds in a slow
# guest).
. "$(dirname "$0")/lib.sh"
need socat
daemon=0
with_smcrd 19101-19106 256 && daemon=1

N=8
SIZE=$((1024 * 1024))
for i in $(seq 1 $N); do
	head -c "$SIZE" /dev/urandom > "$WORK/payload$i"
	sha256sum < "$WORK/payload$i" > "$WORK/payload$i.sum"
done
cat > "$WORK/forking_echo.py" << 'EOF'
import socketserver, sys

class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(65536)
            if not data:
                break
            self.request.sendall(data)

class Server(socketserver.ForkingTCPServer):
    allow_reuse_address = True

server = Server((sys.argv[2], int(sys.argv[1])), Echo)
try:
    server.serve_forever()
except KeyboardInterrupt:
    pass
server.server_close()
EOF
# Pre-forked: the parent listens and forks workers that each accept and
# serve one client at a time; SIGINT to the parent ends them all.
cat > "$WORK/prefork_echo.py" << 'EOF'
import os, signal, socket, sys

listener = socket.create_server((sys.argv[2], int(sys.argv[1])))
workers = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        signal.alarm(120)               # never outlives the test
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            conn, _ = listener.accept()
            while data := conn.recv(65536):
                conn.sendall(data)
            conn.close()
    workers.append(pid)
try:
    signal.pause()
except KeyboardInterrupt:
    pass
for pid in workers:
    os.kill(pid, signal.SIGTERM)
    os.waitpid(pid, 0)
listener.close()
EOF

declare -A server_status
port=19101
for kind in socat python prefork; do
	for mode in plain smcr; do
		name=$kind-$mode
		if [ "$kind" = socat ]; then
			start_bg "server-$name" "$mode" socat "TCP-LISTEN:$port,reuseaddr,fork,bind=$TEST_ADDR" EXEC:cat
			prog=socat
		else
			start_bg "server-$name" "$mode" "$PY" "$WORK/${kind/python/forking}_echo.py" "$port" \
				"$TEST_ADDR"
			prog=python3
		fi
		srv=$LAST_PID
		wait_listen "$port" "$srv" || continue

		pids=()
		for i in $(seq 1 $N); do
			# -t: after sending everything, wait for the whole echo.
			run_mode "$mode" timeout 30 socat -t 30 - "TCP:$TEST_ADDR:$port" \
				< "$WORK/payload$i" > "$WORK/echo-$name-$i" 2> "$WORK/client-$name-$i.err" &
			pids+=($!)
		done
		ok=0
		for i in $(seq 1 $N); do
			wait "${pids[i - 1]}"; rc=$?
			if [ "$rc" = 0 ] && sha256sum < "$WORK/echo-$name-$i" | cmp -s - "$WORK/payload$i.sum"; then
				ok=$((ok + 1))
			else
				fail "$name: client $i: exit status $rc, $(stat -c %s "$WORK/echo-$name-$i") bytes echoed"
			fi
		done
		expect_eq "$name: clients whose 1 MiB came back intact" "$ok" "$N"
		# The forked children exit after their client, but perhaps not
		# yet; stopping the parent first could end them before their
		# summary.  (The parent reaps them: socat at once, python
		# within half a second.)
		for _ in $(seq 1 150); do
			[ "$kind" != prefork ] && pgrep -P "$srv" > /dev/null || break
			sleep 0.1
		done
		if [ "$kind" != prefork ] && pgrep -P "$srv" > /dev/null; then
			fail "$name: forked children still running: $(pgrep -P "$srv" | tr '\n' ' ')"
		fi
		# socat ends on SIGTERM, the python server on SIGINT; both print
		# their summary.
		if [ "$kind" = socat ]; then stop_bg "$srv" TERM 10; else stop_bg "$srv" INT 10; fi
		server_status[$name]=$?
		# ... and ends as it does without the preload
		[ "$mode" = plain ] || expect_eq "$name: server's exit status (as plain)" \
			"${server_status[$name]}" "${server_status[$kind-plain]:-none}"

		serr=$WORK/server-$name.err
		if [ "$mode" = plain ]; then
			if grep -q libsmcr "$serr" "$WORK"/client-"$name"-*.err; then fail "$name: libsmcr lines in the plain run"; fi
			port=$((port + 1))
			continue
		fi
		if [ "$kind" = prefork ]; then
			# the workers accept; SIGTERM ends them without a summary
			accepts=$(grep -c "^libsmcr\[[0-9]*\]: debug: .*TCP connection from .* accepted" "$serr")
			expect_eq "$name: accepts seen by libsmcr in the workers" "$accepts" "$N"
			expect_eq "$name: listening parent's libsmcr summary" "$(summary "$serr" "$prog" "$srv")" "1 0 0 0 0"
		else
			parent_accepts=$(grep -c "^libsmcr\[$srv\]: debug: .*TCP connection from .* accepted" "$serr")
			expect_eq "$name: accepts seen by libsmcr in the listening parent" "$parent_accepts" "$N"
			expect_eq "$name: listening parent's libsmcr summary" "$(summary "$serr" "$prog" "$srv")" "1 0 $N 0 0"
		fi
		clients_ok=0
		for i in $(seq 1 $N); do
			cerr=$WORK/client-$name-$i.err
			if [ "$(seen "$cerr" connect)" = 1 ] && [ "$(summary "$cerr" socat)" = "0 1 0 $SIZE $SIZE" ]; then
				clients_ok=$((clients_ok + 1))
			else
				fail "$name: client $i: libsmcr saw $(seen "$cerr" connect) connects, summary '$(summary "$cerr" socat)'"
			fi
		done
		expect_eq "$name: clients whose libsmcr saw the connect and counted $SIZE out and in" "$clients_ok" "$N"
		[ "$TEST_TRANSPORT" != rdma ] || expect_eq "$name: clients ready for RDMA before the handshake" \
			"$(grep -l 'rdma: ready for a Proposal, before the first handshake' \
				"$WORK"/client-"$name"-*.err | wc -l)" "$N"
		if [ "$kind" = socat ]; then
			children=$(for pid in $(sed -nE "s/^libsmcr\[([0-9]+)\]: info: socat: tcp: .*/\1/p" "$serr" | grep -vx "$srv"); do
					summary "$serr" socat "$pid"; done | sort | uniq -c | sed 's/^ *//')
			expect_eq "$name: forked children's libsmcr summaries" "$children" \
				"$N 0 0 0 $SIZE $SIZE"
		fi
		if [ "$daemon" = 0 ]; then :
		elif [ "$kind" = prefork ]; then    # a worker's accept answers: all its own
			on_transport "$name" "$N" $((2 * N * SIZE))
		else
			on_transport_forked "$name" "$N" $((2 * N * SIZE))
		fi
		port=$((port + 1))
	done
done
finish
