#!/bin/bash
# demo.sh - install what is missing, build, and show smcr at work on a real
# application: redis-server and redis-benchmark, both under libsmcr.so.
#
# Today libsmcr passes every call through to the kernel (the SMC data path
# comes later): the demonstration shows that the application runs unchanged
# and what libsmcr saw of its connections.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$(nproc)" > /dev/null

work=$(mktemp -d /tmp/smcr-demo.XXXXXX)
port=16500
trap 'build/bin/smcr_run redis-cli -p $port shutdown nosave > /dev/null 2>&1 || true; rm -rf "$work"' EXIT

section() { printf '\n== %s\n' "$*"; }

section "configuration (smcrctl show, conf/smcr.conf)"
build/bin/smcrctl -c conf/smcr.conf show

section "redis-server under the preload: smcr_run -l debug redis-server --port $port"
build/bin/smcr_run -l debug redis-server --port "$port" --save '' --appendonly no \
	> "$work/server.out" 2> "$work/server.err" &
for _ in $(seq 50); do redis-cli -p "$port" ping > /dev/null 2>&1 && break; sleep 0.1; done

section "redis-benchmark, plain"
redis-benchmark -p "$port" -n 50000 -c 10 -t set,get -q 2>&1 | tr '\r' '\n' | grep -E '^[A-Z]+:'

section "redis-benchmark under the preload: smcr_run -l info redis-benchmark ..."
build/bin/smcr_run -l info redis-benchmark -p "$port" -n 50000 -c 10 -t set,get -q 2> "$work/client.err" |
	tr '\r' '\n' | grep -E '^[A-Z]+:'
echo "libsmcr in redis-benchmark said:"
sed 's/^/  /' "$work/client.err"

build/bin/smcr_run redis-cli -p "$port" shutdown nosave > /dev/null 2>&1 || true
sleep 0.5
section "what libsmcr saw inside redis-server (first lines and its summary)"
grep libsmcr "$work/server.err" | head -4 | sed 's/^/  /'
echo "  ..."
grep 'libsmcr.*info' "$work/server.err" | sed 's/^/  /'

cat <<'TXT'

Every connection above was plain TCP: libsmcr interposed each socket call,
tracked the connections and counted their bytes, and passed the call through.
Negotiating SMC and moving bytes through shared memory or RDMA come next.
TXT
