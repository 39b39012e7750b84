#!/bin/bash
# demo.sh - install what is missing, build, and show smcr at work on a real
# application: redis-server and redis-benchmark, both under libsmcr.so, with
# smcrd negotiating SMC in their TCP handshakes.
#
# The two libsmcr instances learn from the handshake that both ends speak
# SMC, exchange CLC messages, and move redis's bytes through shared memory
# (the "shm" figures of their summaries).  Needs root: smcrd loads a BPF
# program.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$(nproc)" > /dev/null

work=$(mktemp -d /tmp/smcr-demo.XXXXXX)
chmod 755 "$work"
port=16500
export SMCR_RUNDIR=$work           # a private smcrd, beside any system one
daemon=
cleanup() {
	redis-cli -p "$port" shutdown nosave > /dev/null 2>&1 || true
	[ -n "$daemon" ] && kill "$daemon" 2> /dev/null
	wait 2> /dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
section() { printf '\n== %s\n' "$*"; }
benchmark() {
	"$@" -p "$port" -n 50000 -c 10 -t set,get -q 2> "$work/client.err" |
		tr '\r' '\n' | grep -E '^[A-Z]+: [0-9.]+ requests' | sed 's/^/  /'
}

section "configuration: smcrctl show (SMC allowed on 127.0.0.1 and ::1, port $port only)"
cp conf/smcr.conf "$work/smcr.conf"         # shipped off, with no address or port
build/bin/smcrctl -c "$work/smcr.conf" set enabled=1 "ip_addr_list=127.0.0.1 ::1" \
	port_range_list=$port > /dev/null
build/bin/smcrctl -c "$work/smcr.conf" show

section "smcrd -f: loads its sock_ops program, serves $work/smcrd.sock"
build/bin/smcrd -f -c "$work/smcr.conf" 2> "$work/smcrd.err" &
daemon=$!
for _ in $(seq 50); do build/bin/smcrctl status > /dev/null 2>&1 && break; sleep 0.1; done
sed 's/^/  /' "$work/smcrd.err"

section "redis-server under the preload: smcr_run -l debug redis-server --port $port"
build/bin/smcr_run -l debug redis-server --port "$port" --save '' --appendonly no \
	> /dev/null 2> "$work/server.err" &
for _ in $(seq 50); do redis-cli -p "$port" ping > /dev/null 2>&1 && break; sleep 0.1; done

section "redis-benchmark, plain (its SYNs carry no SMC option: the server records PEERNOSMC)"
benchmark redis-benchmark

section "redis-benchmark under the preload: smcr_run -l info redis-benchmark ..."
benchmark build/bin/smcr_run -l info redis-benchmark
echo "  libsmcr in redis-benchmark said:"
sed 's/^/    /' "$work/client.err"

section "smcrctl status"
build/bin/smcrctl status | sed 's/^/  /'

redis-cli -p "$port" shutdown nosave > /dev/null 2>&1 || true
sleep 0.5
section "what libsmcr saw inside redis-server (a few lines, and its summary)"
grep -m1 'registered with smcrd' "$work/server.err" | sed 's/^/  /'
grep -m2 'fallback to TCP: PEERNOSMC' "$work/server.err" | sed 's/^/  /'
grep -m2 'SMC negotiated' "$work/server.err" | sed 's/^/  /'
grep 'libsmcr.*info' "$work/server.err" | sed 's/^/  /'

cat <<'TXT'

What happened: smcrd put the RFC 7609 option (kind 254, "SMCR") on the SYNs of
sockets that libsmcr marked, and echoed it only for them.  The plain
redis-benchmark did not offer SMC, so its connections were recorded as
fallbacks (PEERNOSMC); the preloaded one negotiated SMC on every connection,
and its requests and replies went through shared memory (the "shm" bytes),
not through TCP.  Between hosts the same connections go over RDMA where a
verbs device serves the address (tests/vm shows it on Soft-RoCE and
Soft-iWARP), and stay on TCP (NOSMCDEV) where none does.
TXT
