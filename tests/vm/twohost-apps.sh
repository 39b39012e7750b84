#!/bin/bash
# twohost-apps.sh BUILD_DIR server|client APP ADDR PORT - one side of a real
# program's run between the two guests of tests/vm, run by guest-twohost.sh
# (the server's side with ADDR its own address, the client's with ADDR the
# server's), both under libsmcr.so.
#
# Owns what each program does across the wire and what its result must be:
#   redis     redis-server; redis-benchmark (SET, GET, INCR, LPUSH, REDIS_N
#             requests each over 10 connections), then redis-cli checks the
#             INCR counter and the list length (REDIS_N each) and shuts the
#             server down (which must exit 0);
#   iperf3    iperf3 -s -1; the client sends IPERF3_MIB MiB: the client's
#             report says exactly that many sent, the server's some received
#             and at most that many;
#   sockperf  sockperf server, PORT (ping-pong, 14 B, poll) and PORT+1
#             (throughput, 65000 B, epoll), SOCKPERF_SECS seconds each: no
#             error, no message dropped, duplicated or out of order, at least
#             100 sent; each server is stopped (SIGINT) once its one client
#             connection has come and gone, and must have handled at least one
#             message;
#   stress    tests/progs/stress, STRESS_CONNS connections (8 at a time, up
#             to STRESS_MAX_BYTES each, every byte of the echo checked, one in
#             8 closed early): both exit 0 and count STRESS_CONNS connections.
# The server's side prints "twohost-apps: listening" once its program listens
# (guest-twohost.sh's phase() then opens the ready port).  Exits 0 if all
# is as said, 1 otherwise.  What crossed the wire over which transport is
# guest-twohost.sh's to check (smcrctl stats).
set -u
build=${1:?usage: $0 BUILD_DIR server|client APP ADDR PORT} role=${2:?} app=${3:?} addr=${4:?} port=${5:?}
export LD_PRELOAD=$build/lib/libsmcr.so SMCR_LOG=${SMCR_LOG:-info}
REDIS_N=${REDIS_N:-1000}
IPERF3_MIB=${IPERF3_MIB:-16}
SOCKPERF_SECS=${SOCKPERF_SECS:-3}
STRESS_CONNS=${STRESS_CONNS:-32}
STRESS_MAX_BYTES=${STRESS_MAX_BYTES:-262144}
work=$(mktemp -d /tmp/twohost-$app.XXXXXX)
failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }
expect() { if [ "$2" = "$3" ]; then ok "$1: $2"; else bad "$1: got '$2', expected '$3'"; fi; }

# listening PORT PID: waits (60 s) until something listens on PORT, says so.
listening() {
	for _ in $(seq 300); do
		if ss -Htln "sport = :$1" | grep -q .; then echo "twohost-apps: listening"; return 0; fi
		kill -0 "$2" 2>/dev/null || break
		sleep 0.2
	done
	bad "nothing listens on port $1"; return 1
}

# served PORT PID: waits (120 s) until one connection to PORT has been
# established and is gone again, then stops sockperf server PID (SIGINT).
served() {
	local seen=0
	for _ in $(seq 600); do
		if ss -Htn state established "sport = :$1" | grep -q .; then seen=1
		elif [ "$seen" = 1 ]; then break
		fi
		sleep 0.2
	done
	[ "$seen" = 1 ] || bad "no client connected to port $1"
	kill -INT "$2"
	wait "$2"
}

# num FILE REGEX: the first number captured by REGEX (sed -E) in FILE
num() { sed -nE "s/.*$2.*/\1/p" "$1" | head -n 1; }

# json FILE: "SENT RECEIVED" of an iperf3 JSON report
json() {
	python3 -c '
import json, sys
try:
    e = json.load(open(sys.argv[1]))["end"]
    print(e["sum_sent"]["bytes"], e["sum_received"]["bytes"])
except Exception as x:
    print("no report:", x)' "$1"
}

case $role-$app in
server-redis)
	redis-server --save "" --appendonly no --protected-mode no --bind "$addr" --port "$port" --dir "$work" &
	pid=$!
	listening "$port" "$pid"
	wait "$pid"
	expect "redis-server exit status" "$?" 0 ;;
client-redis)
	cli() { timeout 30 redis-cli -h "$addr" -p "$port" "$@"; }
	timeout 200 redis-benchmark -h "$addr" -p "$port" -n "$REDIS_N" -c 10 -t set,get,incr,lpush -q \
		> "$work/bench.out"
	expect "redis-benchmark exit status" "$?" 0
	tr '\r' '\n' < "$work/bench.out" | grep -E 'requests per second'
	expect "redis-benchmark results" "$(tr '\r' '\n' < "$work/bench.out" | grep -cE '^(SET|GET|INCR|LPUSH): .*requests per second')" 4
	expect "INCR counter" "$(cli GET counter:__rand_int__)" "$REDIS_N"
	expect "LPUSH list length" "$(cli LLEN mylist)" "$REDIS_N"
	cli SHUTDOWN NOSAVE ;;
server-iperf3)
	iperf3 -s -1 -B "$addr" -p "$port" -J > "$work/server.json" &
	pid=$!
	listening "$port" "$pid"
	wait "$pid"
	expect "iperf3 server exit status" "$?" 0
	read -r _ recv <<< "$(json "$work/server.json")"
	if [ "$recv" -gt 0 ] 2>/dev/null && [ "$recv" -le $((IPERF3_MIB << 20)) ]; then
		ok "iperf3 server received $recv bytes"
	else
		bad "iperf3 server: $(json "$work/server.json")"
	fi ;;
client-iperf3)
	timeout 200 iperf3 -c "$addr" -p "$port" -n "${IPERF3_MIB}M" -J > "$work/client.json"
	expect "iperf3 client exit status" "$?" 0
	read -r sent _ <<< "$(json "$work/client.json")"
	expect "iperf3 bytes sent" "$sent" $((IPERF3_MIB << 20))
	python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["end"]["sum_received"]
print("iperf3: %d bytes received by the server, %.1f MB/s" % (e["bytes"], e["bits_per_second"] / 8e6))' \
		"$work/client.json" ;;
server-sockperf)
	start() {       # start PORT MUX: one sockperf server, its pid in $pid
		echo "T:$addr:$1" > "$work/feed-$1"
		sockperf server -f "$work/feed-$1" -F "$2" --uc-reuseaddr > "$work/server-$1.out" 2>&1 &
		pid=$!
	}
	start "$port" poll; pp=$pid
	start $((port + 1)) epoll; tp=$pid
	listening $((port + 1)) "$tp" > /dev/null && listening "$port" "$pp"
	served "$port" "$pp"
	served $((port + 1)) "$tp"
	for p in "$port" $((port + 1)); do
		handled=$(num "$work/server-$p.out" 'Total ([0-9]+) messages received and handled')
		if [ "${handled:-0}" -gt 0 ]; then ok "sockperf server on $p handled $handled messages"; else bad "sockperf server on $p: $(tail -n 3 "$work/server-$p.out")"; fi
		errors=$(grep -h ERROR "$work/server-$p.out")
		expect "sockperf server on $p: errors" "${errors:-none}" none
	done ;;
client-sockperf)
	for run in ping-pong throughput; do
		case $run in ping-pong) p=$port msg=14 ;; *) p=$((port + 1)) msg=65000 ;; esac
		out=$work/$run.out
		timeout 60 sockperf "$run" --tcp -i "$addr" -p "$p" -t "$SOCKPERF_SECS" -m "$msg" > "$out" 2>&1
		expect "sockperf $run exit status" "$?" 0
		grep -E 'Summary|percentile 50.000' "$out"
		errors=$(grep -h ERROR "$out")
		expect "sockperf $run: errors" "${errors:-none}" none
		if [ "$run" = ping-pong ]; then
			expect "sockperf $run: dropped/duplicated/out-of-order" "$(grep -o '# dropped messages = .*' "$out")" \
				"# dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0"
			sent=$(num "$out" '\[Total Run\].*SentMessages=([0-9]+);')
		else
			sent=$(num "$out" 'Total of ([0-9]+) messages sent')
		fi
		if [ "${sent:-0}" -ge 100 ]; then ok "sockperf $run: $sent messages sent"; else bad "sockperf $run: ${sent:-no} messages sent"; fi
	done ;;
server-stress)
	"$build/bin/stress" server "$port" --addr "$addr" --conns "$STRESS_CONNS" --io=epoll --timeout 150 \
		> "$work/server.out" &
	pid=$!
	listening "$port" "$pid"
	wait "$pid"
	expect "stress server exit status" "$?" 0
	cat "$work/server.out"
	expect "stress server connections" "$(sed -nE 's/^stress server: ([0-9]+) connections.*/\1/p' "$work/server.out")" "$STRESS_CONNS" ;;
client-stress)
	"$build/bin/stress" client "$port" --addr "$addr" --conns "$STRESS_CONNS" --parallel 8 \
		--max-bytes "$STRESS_MAX_BYTES" --seed 20240611 --io=poll --timeout 150 > "$work/client.out"
	expect "stress client exit status" "$?" 0
	cat "$work/client.out"
	expect "stress client connections" "$(sed -nE 's/^stress client: ([0-9]+) connections.*/\1/p' "$work/client.out")" "$STRESS_CONNS" ;;
*)
	echo "usage: $0 BUILD_DIR server|client redis|iperf3|sockperf|stress ADDR PORT" >&2; exit 2 ;;
esac
rm -rf "$work"
exit "$failed"
