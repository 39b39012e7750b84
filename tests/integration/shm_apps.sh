#!/bin/bash
# shm_apps.sh BUILD_DIR - real, unmodified programs under the preload, both
# ends on this host with smcrd running: their bytes must travel over shared
# memory, not TCP, and arrive intact.  For each program the result is checked
# (sha256 of what was sent, the program's own success) and smcrd's statistics
# must show the connections on the shm transport (shm_clients, shm_servers)
# and the bytes on it, not in TCP.  Then every buffer must be back with
# max_memory.  (A peer killed mid-transfer: kill.sh.)
. "$(dirname "$0")/lib.sh" "$1"
need socat curl redis-server redis-benchmark iperf3 sockperf nginx wrk node
start_smcrd 17200-17229 1024

# 1. socat: a 20 MiB file, byte-exact; both directions of a socat pair.
SIZE=$((20 * 1024 * 1024))
head -c "$SIZE" /dev/urandom > "$WORK/in.bin"
want=$(sha256sum < "$WORK/in.bin")
start_bg socat-server smcr timeout 60 socat -u TCP-LISTEN:17200,reuseaddr,bind=127.0.0.1 \
	"OPEN:$WORK/out.bin,creat,trunc"
srv=$LAST_PID
wait_listen 17200 "$srv"
run_mode smcr timeout 60 socat -u "OPEN:$WORK/in.bin" TCP:127.0.0.1:17200 2> "$WORK/socat-client.err"
expect_eq "socat: client exit status" "$?" 0
stop_bg "$srv" - 20
expect_eq "socat: server exit status" "$?" 0
[ "$(sha256sum < "$WORK/out.bin")" = "$want" ] && pass "socat: 20 MiB, sha256 equal" ||
	fail "socat: the file arrived different"
on_transport socat 1 "$SIZE"

# 2. redis: redis-benchmark (epoll, pipelined, 50 clients) and redis-cli.
start_bg redis smcr redis-server --port 17201 --bind 127.0.0.1 --save '' --appendonly no
srv=$LAST_PID
wait_listen 17201 "$srv"
run_mode smcr timeout 120 redis-benchmark -p 17201 -c 50 -n 20000 -t set,get -q \
	> "$WORK/redis-bench.out" 2> "$WORK/redis-bench.err"
expect_eq "redis-benchmark exit status" "$?" 0
grep -q 'GET: ' "$WORK/redis-bench.out" && pass "redis-benchmark: $(tr '\r' '\n' < "$WORK/redis-bench.out" | grep -E '^(SET|GET)' | tr '\n' ' ')" ||
	fail "redis-benchmark printed no result"
run_mode smcr timeout 30 redis-cli -p 17201 set smcr-key "$want" > /dev/null 2>&1
expect_eq "redis-cli: the value set comes back" \
	"$(run_mode smcr timeout 30 redis-cli -p 17201 get smcr-key 2> /dev/null)" "$want"
stop_bg "$srv"
expect_eq "redis-server: exit status on SIGTERM" "$?" 0
on_transport redis 50 100000

# 3. iperf3 (its control connection and its data stream).
start_bg iperf3-server smcr iperf3 -s -1 -p 17202 --bind 127.0.0.1
srv=$LAST_PID
wait_listen 17202 "$srv"
run_mode smcr timeout 60 iperf3 -c 127.0.0.1 -p 17202 -t 2 -J > "$WORK/iperf3.json" 2> "$WORK/iperf3.err"
expect_eq "iperf3: client exit status" "$?" 0
stop_bg "$srv" -               # -1: it exits after one test
expect_eq "iperf3: server exit status" "$?" 0
gbit=$("$PY" -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/1e9, 2))' "$WORK/iperf3.json" 2>/dev/null)
[ -n "$gbit" ] && pass "iperf3: $gbit Gbit/s" || fail "iperf3: no result"
on_transport iperf3 2 $((100 * 1024 * 1024))

# 4. sockperf ping-pong (TCP, its own poll/epoll loop).
start_bg sockperf-server smcr sockperf server --tcp -i 127.0.0.1 -p 17203
srv=$LAST_PID
wait_listen 17203 "$srv"
run_mode smcr timeout 60 sockperf ping-pong --tcp -i 127.0.0.1 -p 17203 -t 2 -m 14 --mps 100000 \
	> "$WORK/sockperf.out" 2> "$WORK/sockperf.err"
expect_eq "sockperf: client exit status" "$?" 0
lat=$(grep -oE 'percentile 50.000 = +[0-9.]+' "$WORK/sockperf.out" | grep -oE '[0-9.]+$')
[ -n "$lat" ] && pass "sockperf ping-pong 14 B: p50 $lat us one way" || fail "sockperf: no latency"
stop_bg "$srv"
expect_eq "sockperf: server exit status on SIGTERM (as plain)" "$?" 143
on_transport sockperf 1 14

# 5. nginx (epoll, sendfile) with curl and wrk.
mkdir -p "$WORK/www" "$WORK/nginx"
chmod 755 "$WORK" "$WORK/www"
head -c 100 /dev/urandom > "$WORK/www/small"
head -c $((1024 * 1024)) /dev/urandom > "$WORK/www/big"
cat > "$WORK/nginx/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
error_log $WORK/nginx/error.log;
pid $WORK/nginx/nginx.pid;
events { worker_connections 256; }
http {
	access_log off;
	sendfile on;
	client_body_temp_path $WORK/nginx;
	proxy_temp_path $WORK/nginx;
	fastcgi_temp_path $WORK/nginx;
	uwsgi_temp_path $WORK/nginx;
	scgi_temp_path $WORK/nginx;
	server { listen 127.0.0.1:17204; root $WORK/www; }
}
EOF
start_bg nginx smcr nginx -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log"
srv=$LAST_PID
wait_listen 17204 "$srv"
for f in small big; do
	got=$(run_mode smcr timeout 30 curl -s http://127.0.0.1:17204/$f 2> "$WORK/curl-$f.err" | sha256sum)
	expect_eq "nginx+curl: /$f byte-exact" "$got" "$(sha256sum < "$WORK/www/$f")"
done
run_mode smcr timeout 30 wrk -t1 -c10 -d2s http://127.0.0.1:17204/small \
	> "$WORK/wrk.out" 2> "$WORK/wrk.err"
expect_eq "wrk: exit status" "$?" 0
reqs=$(grep -oE '^Requests/sec: +[0-9.]+' "$WORK/wrk.out" | grep -oE '[0-9.]+$')
grep -qE 'Non-2xx|Socket errors' "$WORK/wrk.out" && fail "wrk: errors: $(grep -E 'Non-2xx|Socket errors' "$WORK/wrk.out")"
[ -n "$reqs" ] && pass "nginx+wrk: $reqs requests/s" || fail "wrk: no result"
stop_bg "$srv" QUIT
expect_eq "nginx: exit status on SIGQUIT" "$?" 0
on_transport nginx 2 $((1024 * 1024))

# 6. python asyncio: an echo server and client, many round trips.
cat > "$WORK/echo.py" <<'EOF'
import asyncio, hashlib, os, sys
async def handle(r, w):
    while data := await r.read(65536):
        w.write(data)
        await w.drain()
    w.close()
async def client(port):
    r, w = await asyncio.open_connection('127.0.0.1', port)
    sent, got = hashlib.sha256(), hashlib.sha256()
    for i in range(300):
        msg = os.urandom(1 + (i * 7919) % 200000)
        sent.update(msg)
        w.write(msg)
        await w.drain()
        got.update(await r.readexactly(len(msg)))
    w.close()
    print('same' if sent.digest() == got.digest() else 'different')
async def main():
    if sys.argv[1] == 'server':
        srv = await asyncio.start_server(handle, '127.0.0.1', int(sys.argv[2]))
        async with srv:
            await srv.serve_forever()
    else:
        await client(int(sys.argv[2]))
asyncio.run(main())
EOF
start_bg asyncio-server smcr "$PY" "$WORK/echo.py" server 17205
srv=$LAST_PID
wait_listen 17205 "$srv"
expect_eq "python asyncio echo: 300 messages" \
	"$(run_mode smcr timeout 60 "$PY" "$WORK/echo.py" client 17205 2> "$WORK/asyncio-client.err")" same
stop_bg "$srv"
expect_eq "python asyncio server: exit status on SIGTERM (as plain)" "$?" 143
on_transport asyncio 1 1000000

# 7. node http (libuv).
start_bg node smcr node -e '
require("http").createServer((q, s) => s.end("x".repeat(300000))).listen(17206, "127.0.0.1")'
srv=$LAST_PID
wait_listen 17206 "$srv"
expect_eq "node http + curl: 300000 bytes" \
	"$(run_mode smcr timeout 30 curl -s http://127.0.0.1:17206/ 2> "$WORK/node-curl.err" | wc -c)" 300000
stop_bg "$srv"
expect_eq "node: exit status on SIGTERM (as plain)" "$?" 143
on_transport node 1 300000

# Every buffer is back.
memory_back "all SMC buffers returned to max_memory" 30
finish
