#!/bin/bash
# compare.sh BUILD_DIR [RUNS] - plain TCP against smcr on loopback, with real
# programs.  Each client and server runs twice: plainly ("TCP"), and both
# under LD_PRELOAD=BUILD_DIR/lib/libsmcr.so ("smcr") with a private smcrd
# (SMCR_RUNDIR in a temporary directory; enabled = 1, ip_addr_list =
# 127.0.0.1 ::1, port_range_list = the ports below, max_memory = 4096; the
# RLIMIT_NOFILE that conf/smcrd.service gives it):
#
#   sockperf ping-pong, 14 B and 1 KiB, 3 s at up to 100000 messages/s: p50 and p99 of the latency as
#            sockperf prints it, i.e. one-way = half the round trip (us)
#   sockperf throughput, 65536-byte messages, 3 s: MB/s as sockperf prints it
#   iperf3   one stream, 5 s: Gbit/s received
#   redis    redis-benchmark against redis-server, SET then GET, -c 1
#            (-n 50000) and -c 50 (-n 250000): requests/s
#   nginx    1 worker, access_log off, sendfile on; wrk -t1 -c10 -d5s on a
#            100-byte and a 1 MiB file: requests/s
#   nginx-many  (only if SMCR_BENCH_ONLY names it) the same on the 100-byte
#            file with many connections: wrk -t1 -c1000 and -c5000 -d10s
#            (SMCR_BENCH_MANY="1000 5000": the -c of each measurement),
#            RLIMIT_NOFILE raised for nginx (worker_rlimit_nofile) and wrk
#            (prlimit): requests/s; for smcr also the SMC buffer memory per
#            connection end at its peak (below)
#
# Every run measures every benchmark on both sides, TCP first in odd runs and
# smcr first in even ones, so that drift hits both alike; the table gives the
# median of RUNS (default 5) for each side, the ratio smcr/TCP, and beside
# each figure the CPU time (user+sys) of the server and of the client per
# operation, median of the runs, and its ratio smcr/TCP: per round trip
# (ping-pong, us/rt: sockperf's ReceivedMessages of the whole run), per
# request (redis: -n; nginx: wrk's count; us/req) or per GB moved (sockperf
# throughput: messages sent x 64 KiB; iperf3: the receiver's transfer;
# s/GB).  The server's CPU from utime+stime in /proc/PID/stat of all its
# processes (its process group: nginx's master and worker) read just before
# and just after the client ran; the client's from bash's `time` (getrusage
# of the client and its children once reaped).  Both count what the whole
# client run cost, start and warm-up included.  smcrd runs during the TCP
# runs too: those programs are not preloaded, so their SYNs carry no option
# and their sockets nothing of smcr.
#
# nginx-many: while wrk runs, on both sides (so that its CPU weighs alike),
# `smcrctl stats --json` every 0.5 s; on the smcr side it
# gives the SMC buffer memory in use and the SMC connection ends open (each
# transport's clients + servers - closed, less what that was before the
# run: an exited process's connections stay counted); at the sample with
# the most ends, memory / ends is the cost of one connection end (both ends
# of each connection are on this host), set against the bar rmb_size +
# sndbuf_size + 8 KiB.  The connections SMC negotiated during the run, and
# the fallbacks to TCP by reason, are printed too: wrk's connections must
# have gone over SMC.
#
# Prints `smcrctl stats` (which path the preloaded connections took) and
# the table, and writes both, with every run's figures, to
# BUILD_DIR/bench-compare.txt.  Ports 17500-17509.  SMCR_BENCH_SET="key=value
# ..." adds smcrctl settings (e.g. rmb_size=1024 sndbuf_size=1024);
# SMCR_BENCH_ONLY="sockperf redis" runs only those groups.
# SMCR_BENCH_MODE chooses where the programs run, and the table says which:
#   separate    (default) as the scheduler places them;
#   shared-cpu  every process pinned to CPU 0 (taskset): both sides share one
#               CPU, the case where spinning must give way;
#   busy-host   a CPU hog (a shell loop) on every CPU while everything runs,
#               TCP and smcr alike.
# A benchmark, not a test (CI never runs it).  Needs root (smcrd loads a BPF
# program) and no other smcrd acting on its connections: with
# SMCR_TEST_CGROUP (a cgroup v2 directory) it runs there, and smcrd attaches
# its program there, beside smcrds of other cgroups; without, at the root
# cgroup, alone on the host.  About 90 s per run on a 2-core machine.
set -u -o pipefail
usage="usage: $0 BUILD_DIR [RUNS]"
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "$usage" >&2; exit 2; }
build=$(cd "$1" 2> /dev/null && pwd) || { echo "$0: no directory $1" >&2; exit 2; }
runs=${2:-5}
case $runs in '' | *[!0-9]* | 0) echo "$usage (RUNS: a positive number)" >&2; exit 2 ;; esac
src=$(cd "$(dirname "$0")/../.." && pwd)
lib=$build/lib/libsmcr.so
out_file=$build/bench-compare.txt

T_SOCKPERF=3    # seconds per sockperf measurement
PP_MPS=100000   # ping-pong messages per second at most: TCP's round trip allows far fewer here
T_IPERF=5       # seconds of iperf3
T_WRK=5         # seconds per wrk measurement
T_WRK_MANY=10   # seconds per wrk measurement with many connections
MANY_CONNS=${SMCR_BENCH_MANY:-1000 5000}
# RLIMIT_NOFILE of nginx's worker and of wrk in nginx-many, and smcrd's as
# conf/smcrd.service sets it (its shm broker keeps half for offers, 4 each:
# one per SMC connection end), both at most this shell's hard limit (raising
# it needs CAP_SYS_RESOURCE)
hard_nofile=$(ulimit -Hn)
[ "$hard_nofile" = unlimited ] && hard_nofile=1048576
MANY_NOFILE=$((hard_nofile < 65536 ? hard_nofile : 65536))
SMCRD_NOFILE=$((hard_nofile < 524288 ? hard_nofile : 524288))
N_REDIS_C1=50000
N_REDIS_C50=250000
PORT0=17500     # sockperf 17500/1, iperf3 17502/3, redis 17504/5, nginx 17506/7, nginx-many 17508/9 (TCP/smcr)
PORTS=17500-17509

# -- what is needed -----------------------------------------------------------
die() { echo "$(basename "$0"): $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (smcrd loads a BPF program)"
for f in "$lib" "$build/bin/smcrd" "$build/bin/smcrctl"; do
	[ -e "$f" ] || die "$f is missing: build first (cmake -S $src -B $build && cmake --build $build)"
done
for prog in setsid timeout pgrep awk sed prlimit; do
	command -v "$prog" > /dev/null || die "$prog is missing (procps, coreutils, util-linux)"
done
PATH=$PATH:/usr/sbin:/usr/local/sbin    # nginx
declare -A NEEDS=([sockperf]="sockperf" [iperf3]="iperf3"
	[redis]="redis-server redis-benchmark" [nginx]="nginx wrk" [nginx-many]="nginx wrk python3")
GROUPS_ALL=(sockperf iperf3 redis nginx)    # nginx-many: only when asked for
groups_run=() missing=() skipped=()
for g in ${SMCR_BENCH_ONLY:-${GROUPS_ALL[*]}}; do
	[ -n "${NEEDS[$g]:-}" ] || die "SMCR_BENCH_ONLY: no benchmark group $g (${GROUPS_ALL[*]} nginx-many)"
	m=()
	for prog in ${NEEDS[$g]}; do command -v "$prog" > /dev/null || m+=("$prog"); done
	if [ ${#m[@]} = 0 ]; then groups_run+=("$g"); else missing+=("${m[@]}"); skipped+=("$g (missing ${m[*]})"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "missing: ${missing[*]} - skipping: ${skipped[*]}" >&2
	echo "(Debian: apt-get install sockperf iperf3 redis-server redis-tools nginx-light wrk util-linux python3)" >&2
fi
[ ${#groups_run[@]} -gt 0 ] || die "nothing to run"
[[ $MANY_CONNS =~ ^\ *[1-9][0-9]*(\ +[1-9][0-9]*)*\ *$ ]] || die "SMCR_BENCH_MANY=$MANY_CONNS: numbers of connections"
mode=${SMCR_BENCH_MODE:-separate}
case $mode in
separate | busy-host) ;;
shared-cpu)
	command -v taskset > /dev/null || die "taskset is missing (util-linux)"
	[ -n "${SMCR_BENCH_PINNED:-}" ] ||
		SMCR_BENCH_PINNED=1 exec taskset -c 0 "$0" "$@" ;;
*) die "SMCR_BENCH_MODE=$mode: expected separate, shared-cpu or busy-host" ;;
esac
smcrd_args=()
if [ -n "${SMCR_TEST_CGROUP:-}" ]; then
	echo $$ > "$SMCR_TEST_CGROUP/cgroup.procs" || die "cannot run in cgroup $SMCR_TEST_CGROUP"
	smcrd_args=(-C "$SMCR_TEST_CGROUP")
else
	others=$(pgrep -x smcrd | tr '\n' ' ')
	[ -z "$others" ] || die "another smcrd is running (pid ${others% }): only one may run at the root cgroup; stop it, or give SMCR_TEST_CGROUP"
fi

# -- processes we start, and their end -----------------------------------------
work=$(mktemp -d /tmp/smcr-compare.XXXXXX)
chmod 755 "$work"                  # nginx's workers (nobody) reach smcrd.sock and the files
export SMCR_RUNDIR=$work
daemon='' SRV='' SAMPLER='' keep=0
live=()                            # process groups (servers, the client) still running
hz=$(getconf CLK_TCK)

cleanup() {
	trap - EXIT INT TERM
	local pg
	for pg in "${live[@]}"; do kill -TERM -- "-$pg" 2> /dev/null; done
	for pg in "${live[@]}"; do
		for _ in $(seq 30); do pgrep -g "$pg" > /dev/null || break; sleep 0.1; done
		pgrep -g "$pg" > /dev/null && kill -KILL -- "-$pg" 2> /dev/null
	done
	if [ -n "$daemon" ]; then
		kill -TERM "$daemon" 2> /dev/null
		for _ in $(seq 30); do kill -0 "$daemon" 2> /dev/null || break; sleep 0.1; done
		kill -0 "$daemon" 2> /dev/null && kill -KILL "$daemon" 2> /dev/null
	fi
	wait 2> /dev/null
	[ -z "$SAMPLER" ] || kill "$SAMPLER" 2> /dev/null
	if [ "$keep" = 0 ]; then rm -rf "$work"; else echo "(logs kept in $work)"; fi
}
trap cleanup EXIT
trap 'echo; echo "interrupted"; exit 130' INT TERM

# listening PORT: something listens on PORT (IPv4 or IPv6), without connecting
# to it (a connection would count in smcr's statistics).
listening() {
	cat /proc/net/tcp /proc/net/tcp6 2> /dev/null |
		awk -v p=":$(printf %04X "$1")" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'
}

# cpu_ticks PGID: utime + stime of every process in the process group.
cpu_ticks() {
	cat /proc/[0-9]*/stat 2> /dev/null | awk -v g="$1" '
		{ s = $0; sub(/^.*\) /, "", s); split(s, f, " "); if (f[3] == g) t += f[12] + f[13] }
		END { print t + 0 }'
}

# srv_start SIDE NAME PORT CMD...: a server in its own session (so its pid is
# its process group, for cpu_ticks and cleanup), under the preload if SIDE is
# smcr; waits until it listens on PORT.  Sets SRV.
srv_start() {
	local side=$1 name=$2 port=$3 log
	shift 3
	log=$work/$name-$side-r$run.server
	if [ "$side" = smcr ]; then
		setsid env LD_PRELOAD="$lib" "$@" < /dev/null > "$log" 2>&1 &
	else
		setsid "$@" < /dev/null > "$log" 2>&1 &
	fi
	SRV=$!
	live+=("$SRV")
	for _ in $(seq 100); do
		listening "$port" && return 0
		kill -0 "$SRV" 2> /dev/null || break
		sleep 0.1
	done
	echo "  $name ($side): the server did not listen on port $port: $(tail -n 3 "$log" | tr '\n' ' ')"
	keep=1
	srv_stop KILL
	return 1
}

# srv_stop [SIGNAL]: stops the server SRV (its whole process group).
srv_stop() {
	local pg=$SRV i
	kill -s "${1:-TERM}" -- "-$pg" 2> /dev/null
	for _ in $(seq 50); do pgrep -g "$pg" > /dev/null || break; sleep 0.1; done
	pgrep -g "$pg" > /dev/null && kill -KILL -- "-$pg" 2> /dev/null
	wait "$pg" 2> /dev/null
	for i in "${!live[@]}"; do [ "${live[$i]}" = "$pg" ] && unset 'live[i]'; done
	SRV=
}

# cli SIDE NAME LIMIT CMD...: runs a client (under the preload if SIDE is
# smcr) for at most LIMIT seconds, its output in $OUT; sets CPU_S (the
# server's CPU seconds meanwhile) and CPU_C (the client's, from bash's `time`
# in a shell of its own).  Its exit status.  The client runs in a session of
# its own, which `wait` lets the INT/TERM trap interrupt at once (a client
# in the foreground that catches SIGINT itself, as sockperf and iperf3 do,
# would make bash ignore Ctrl-C) and cleanup kill.
cli() {
	local side=$1 name=$2 limit=$3 t0 t1 rc pid i pre=()
	shift 3
	OUT=$work/$name-$side-r$run.out
	[ "$side" = smcr ] && pre=(env LD_PRELOAD="$lib")
	t0=$(cpu_ticks "$SRV")
	# shellcheck disable=SC2016
	setsid bash -c 'TIMEFORMAT="%3U %3S"; out=$1; shift; time "$@" < /dev/null > "$out" 2> "$out.err"' \
		client "$OUT" timeout --foreground -k 5 "$limit" "${pre[@]}" "$@" 2> "$OUT.time" &
	pid=$!
	live+=("$pid")
	wait "$pid"
	rc=$?
	for i in "${!live[@]}"; do [ "${live[$i]}" = "$pid" ] && unset 'live[i]'; done
	t1=$(cpu_ticks "$SRV")
	CPU_S=$(awk -v a="$t0" -v b="$t1" -v hz="$hz" 'BEGIN { printf "%.2f", (b - a) / hz }')
	CPU_C=$(awk 'NF == 2 { printf "%.2f", $1 + $2 }' "$OUT.time" 2> /dev/null)
	[ -n "$CPU_C" ] || CPU_C=0
	[ "$rc" = 0 ] || echo "  $name ($side): exit status $rc: $(cat "$OUT.err" "$OUT" | grep -v '^$' | tail -n 2 | tr '\n' ' ')"
	return "$rc"
}

# -- the benchmarks: rows of the table --------------------------------------------
# row KEY LABEL UNIT FORMAT PER: a row whose figure is in UNIT, and whose CPU
# is shown per PER: rt (round trip), req (request) or GB (moved).
ROWS=()
declare -A LABEL UNIT FMT PER VAL CS CC PS PC OK
row() { ROWS+=("$1"); LABEL[$1]=$2; UNIT[$1]=$3; FMT[$1]=$4; PER[$1]=$5; }
for g in "${groups_run[@]}"; do
	case $g in
	sockperf)
		row pp14.p50 "sockperf ping-pong 14 B, p50" "us one-way" %.2f rt
		row pp14.p99 "sockperf ping-pong 14 B, p99" "us one-way" %.2f rt
		row pp1024.p50 "sockperf ping-pong 1 KiB, p50" "us one-way" %.2f rt
		row pp1024.p99 "sockperf ping-pong 1 KiB, p99" "us one-way" %.2f rt
		row tp "sockperf throughput 64 KiB" "MB/s" %.0f GB ;;
	iperf3)
		row iperf3 "iperf3, 1 stream, ${T_IPERF} s" "Gbit/s" %.2f GB ;;
	redis)
		row redis.c1.set "redis-benchmark -c 1 SET" "req/s" %.0f req
		row redis.c1.get "redis-benchmark -c 1 GET" "req/s" %.0f req
		row redis.c50.set "redis-benchmark -c 50 SET" "req/s" %.0f req
		row redis.c50.get "redis-benchmark -c 50 GET" "req/s" %.0f req ;;
	nginx)
		row nginx.100 "nginx+wrk 100 B file" "req/s" %.0f req
		row nginx.1m "nginx+wrk 1 MiB file" "req/s" %.0f req ;;
	nginx-many)
		for c in $MANY_CONNS; do row "many.c$c" "nginx+wrk -c $c, 100 B file" "req/s" %.0f req; done ;;
	esac
done
declare -A CPU_UNIT=([rt]="us/rt" [req]="us/req" [GB]="s/GB")

# per_op CPU_SECONDS OPS PER: CPU_SECONDS per operation, in CPU_UNIT[PER]
# (OPS: round trips, requests, or bytes if PER is GB); fails if OPS is 0.
per_op() {
	awk -v c="$1" -v n="$2" -v per="$3" 'BEGIN { if (n <= 0) exit 1
		printf "%.6g\n", per == "GB" ? c / (n / 1e9) : c * 1e6 / n }'
}

# short NUMBER: three significant digits or so, without an exponent.
short() {
	awk -v v="$1" 'BEGIN { f = v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : v >= 1 ? "%.2f" : "%.3f"; printf f, v }'
}

# put ROW SIDE VALUE OPS: one measurement, made of OPS operations (round
# trips, requests; bytes for a per-GB row) among which the CPU_S and CPU_C of
# the last cli are shared.  An empty or non-numeric VALUE or OPS, or none
# made, is a failure: counted, logs kept.
put() {
	local r=$1 side=$2 v=$3 ops=${4:-} ps='' pc=''
	if [[ $ops =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
		ps=$(per_op "$CPU_S" "$ops" "${PER[$r]}") && pc=$(per_op "$CPU_C" "$ops" "${PER[$r]}")
	fi
	if [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] && [ -n "$pc" ]; then
		VAL[$r.$side]+="$v " CS[$r.$side]+="$CPU_S " CC[$r.$side]+="$CPU_C "
		PS[$r.$side]+="$ps " PC[$r.$side]+="$pc "
		OK[$r.$side]=$((${OK[$r.$side]:-0} + 1))
		printf '  %-5s %-31s %10s %-10s cpu srv %5s s, cli %5s s: %s/%s %s\n' "${side/plain/TCP}" \
			"${LABEL[$r]}" "$(printf "${FMT[$r]}" "$v")" "${UNIT[$r]}" "$CPU_S" "$CPU_C" \
			"$(short "$ps")" "$(short "$pc")" "${CPU_UNIT[${PER[$r]}]}"
	else
		printf '  %-5s %-31s FAILED (see %s)\n' "${side/plain/TCP}" "${LABEL[$r]}" "${OUT:-the server log}"
		keep=1
	fi
}

# num FILE SED-REGEX: the first number captured by the extended regex in FILE.
num() { sed -nE "s#$2#\1#p" "$1" 2> /dev/null | head -n 1; }

bench_sockperf() {
	local side=$1 port=$2 m p50 p99 rt bw bytes
	srv_start "$side" sockperf "$port" sockperf server --tcp -i 127.0.0.1 -p "$port" -m 65536 --uc-reuseaddr ||
		{ OUT=; for m in 14 1024; do put "pp$m.p50" "$side" ""; put "pp$m.p99" "$side" ""; done; put tp "$side" ""; return; }
	for m in 14 1024; do
		p50='' p99='' rt=''
		# paced, both sides alike: unpaced, a sub-microsecond round trip overruns
		# sockperf's table of sequence numbers ("_seqN > m_maxSequenceNo")
		if cli "$side" "sockperf-pp$m" 30 sockperf ping-pong --tcp -i 127.0.0.1 -p "$port" \
			-t "$T_SOCKPERF" -m "$m" --mps "$PP_MPS"; then
			p50=$(num "$OUT" '.*percentile 50\.000 = *([0-9.]+).*')
			p99=$(num "$OUT" '.*percentile 99\.000 = *([0-9.]+).*')
			# every round trip of the run, warm-up included, as the CPU counts
			rt=$(num "$OUT" '.*\[Total Run\].*ReceivedMessages=([0-9]+).*')
		fi
		put "pp$m.p50" "$side" "$p50" "$rt"
		put "pp$m.p99" "$side" "$p99" "$rt"
	done
	bw='' bytes=''
	if cli "$side" sockperf-tp 30 sockperf throughput --tcp -i 127.0.0.1 -p "$port" -t "$T_SOCKPERF" -m 65536; then
		bw=$(num "$OUT" '.*Summary: BandWidth is ([0-9.]+) MBps.*')
		bytes=$(num "$OUT" '.*Total of ([0-9]+) messages sent.*')
		[ -z "$bytes" ] || bytes=$((bytes * 65536))
	fi
	put tp "$side" "$bw" "$bytes"
	srv_stop INT
}

bench_iperf3() {
	local side=$1 port=$2 v='' bytes=''
	srv_start "$side" iperf3 "$port" iperf3 -s -p "$port" || { OUT=; put iperf3 "$side" ""; return; }
	if cli "$side" iperf3 $((T_IPERF + 25)) iperf3 -c 127.0.0.1 -p "$port" -t "$T_IPERF" -f m; then
		v=$(awk '/receiver/ { for (i = 2; i <= NF; i++) if ($i == "Mbits/sec") printf "%.3f\n", $(i - 1) / 1000 }' "$OUT" | head -n 1)
		# the receiver's transfer, in iperf3's binary units
		bytes=$(awk 'BEGIN { m["Bytes"] = 1; m["KBytes"] = 2 ^ 10; m["MBytes"] = 2 ^ 20; m["GBytes"] = 2 ^ 30 }
			/receiver/ { for (i = 2; i <= NF; i++) if ($i in m) { printf "%.0f\n", $(i - 1) * m[$i]; exit } }' "$OUT")
	fi
	put iperf3 "$side" "$v" "$bytes"
	srv_stop TERM
}

bench_redis() {
	local side=$1 port=$2 c n t v
	srv_start "$side" redis "$port" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" ||
		{ OUT=; for c in 1 50; do put "redis.c$c.set" "$side" ""; put "redis.c$c.get" "$side" ""; done; return; }
	for c in 1 50; do
		n=$N_REDIS_C1
		[ "$c" = 50 ] && n=$N_REDIS_C50
		for t in set get; do
			v=
			if cli "$side" "redis-c$c-$t" 120 redis-benchmark -h 127.0.0.1 -p "$port" -c "$c" -n "$n" -t "$t" --csv; then
				v=$(awk -F'"' -v t="${t^^}" '$2 == t { print $4 }' "$OUT")
			fi
			put "redis.c$c.$t" "$side" "$v" "$n"
		done
	done
	srv_stop TERM
}

# nginx_conf PORT [CONNS]: a private configuration in $work/nginx; with
# CONNS, for that many connections: worker_connections and the worker's
# RLIMIT_NOFILE raised, and a listen backlog that takes them arriving at
# once (up to net.core.somaxconn).
nginx_conf() {
	local d=$work/nginx many='' backlog='' conns=1024
	mkdir -p "$d/www" "$d/tmp"
	[ -e "$d/www/100b.bin" ] || head -c 100 /dev/urandom > "$d/www/100b.bin"
	[ -e "$d/www/1m.bin" ] || head -c 1048576 /dev/urandom > "$d/www/1m.bin"
	chmod -R a+rX "$d"
	[ -z "${2:-}" ] || many="worker_rlimit_nofile $MANY_NOFILE;" backlog=" backlog=$2" conns=$(($2 + 1024))
	cat > "$d/nginx-$1.conf" << CONF
worker_processes 1;
daemon off;
master_process on;
pid $d/nginx-$1.pid;
error_log $d/error-$1.log warn;
$many
events { worker_connections $conns; }
http {
	access_log off;
	sendfile on;
	tcp_nopush on;
	keepalive_requests 100000000;
	default_type application/octet-stream;
	client_body_temp_path $d/tmp/body;
	proxy_temp_path $d/tmp/proxy;
	fastcgi_temp_path $d/tmp/fastcgi;
	uwsgi_temp_path $d/tmp/uwsgi;
	scgi_temp_path $d/tmp/scgi;
	server {
		listen 127.0.0.1:$1$backlog;
		root $d/www;
	}
}
CONF
	echo "$d/nginx-$1.conf"
}

# nginx_start SIDE PORT [CONNS]: nginx (nginx_conf) as the server SRV.
nginx_start() {
	srv_start "$1" nginx "$2" nginx -p "$work/nginx" -e "$work/nginx/error-$2.log" -c "$(nginx_conf "$2" "${3:-}")"
}

# wrk_put ROW SIDE NAME SECONDS WRK-ARGS...: wrk for SECONDS against nginx,
# its requests/s the figure of ROW (none if wrk saw socket errors or non-2xx
# answers: they are printed), its count of requests the operations.
wrk_put() {
	local r=$1 side=$2 name=$3 secs=$4 v='' n=''
	shift 4
	if cli "$side" "$name" $((secs + 25)) "$@" -d"${secs}s"; then
		if grep -qE 'Socket errors|Non-2xx' "$OUT"; then
			echo "  wrk ($side): $(grep -E 'Socket errors|Non-2xx' "$OUT" | tr '\n' ' ')"
		else
			v=$(num "$OUT" '^Requests/sec: *([0-9.]+).*')
			n=$(num "$OUT" '^ *([0-9]+) requests in .*')
		fi
	fi
	put "$r" "$side" "$v" "$n"
}

bench_nginx() {
	local side=$1 port=$2 f r
	nginx_start "$side" "$port" || { OUT=; put nginx.100 "$side" ""; put nginx.1m "$side" ""; return; }
	for f in 100b 1m; do
		r=nginx.100
		[ "$f" = 1m ] && r=nginx.1m
		wrk_put "$r" "$side" "wrk-$f" "$T_WRK" wrk -t1 -c10 "http://127.0.0.1:$port/$f.bin"
	done
	srv_stop TERM
}

# smc_state: "IN_USE ENDS SMC_CLIENTS SMC_SERVERS" from smcrd's statistics
# now: the SMC buffer memory in use (bytes), the SMC connection ends open
# (every transport's clients + servers - closed), and the connects and
# accepts SMC was negotiated for so far.
smc_state() {
	"$build/bin/smcrctl" stats --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
ends = sum(t["clients"] + t["servers"] - t["closed"] for t in j["transports"].values())
c = j["connections"]
print(j["memory"]["in_use"], ends, c["smc_clients"], c["smc_servers"])'
}

# fallbacks_now: the connection ends smcrd counts as kept on TCP so far, one
# "REASON COUNT" line each.
fallbacks_now() {
	"$build/bin/smcrctl" stats --json | python3 -c '
import json, sys
for r in json.load(sys.stdin)["connections"]["fallback_reasons"]:
    print(r["name"], r["count"])'
}

# fallbacks_since BEFORE: the fallbacks counted since fallbacks_now said
# BEFORE, as "REASON: COUNT, ..." ("none" if none).
fallbacks_since() {
	{ sed 's/^/- /' <<< "$1"; fallbacks_now | sed 's/^/+ /'; } | awk '
		NF == 3 { n[$2] += ($1 == "+" ? $3 : -$3) }
		END { for (k in n) if (n[k]) { printf "%s%s: %d", sep, k, n[k]; sep = ", " }
		      if (!sep) printf "none"; print "" }'
}

# sampler_start FILE: smc_state every half second into FILE, until
# sampler_stop (or this script's end).
sampler_start() {
	( while kill -0 $$ 2> /dev/null; do smc_state; sleep 0.5; done ) > "$1" 2> /dev/null &
	SAMPLER=$!
}
sampler_stop() { kill "$SAMPLER" 2> /dev/null; wait "$SAMPLER" 2> /dev/null; SAMPLER=; }

# many_smc ROW CONNS STATE FALLBACKS SAMPLES: for a smcr run of wrk with
# CONNS connections, from smc_state and fallbacks_now before it (STATE,
# FALLBACKS) and the samples taken during it: prints and records what SMC
# negotiated, the fallbacks, and the memory per connection end at the peak
# (the sample with the most ends open; of those, the most memory).  Ends
# counted open before it are not this run's: a process that exits holding
# connections (wrk) leaves them counted as open, never closed.  The
# memory in use counts every buffer smcrd granted, offers of connections that
# then fell back too: with fallbacks, per end is more than one costs.
declare -A NEG FB MEM_END MEM_PEAK MEM_ENDS
many_smc() {
	local r=$1 conns=$2 state=$3 fallbacks=$4 samples=$5 e0 c0 s0 m e c s fb mib per
	read -r _ e0 c0 s0 <<< "$state"
	read -r _ _ c s <<< "$(smc_state)"
	fb=$(fallbacks_since "$fallbacks")
	NEG[$r]+="$((c - c0))/$((s - s0)) " FB[$r]+="$fb; "
	echo "  smcr  -c $conns: SMC negotiated for $((c - c0)) connects, $((s - s0)) accepts (wrk: $conns);" \
		"fallbacks: $fb"
	read -r m e _ <<< "$(sort -n -k2,2 -k1,1 "$samples" | tail -n 1)"
	e=$((${e:-0} - e0))
	read -r mib per <<< "$(awk -v m="${m:-0}" -v e="${e:-0}" 'BEGIN {
		if (e > 0) printf "%.1f %.1f\n", m / 1048576, m / e / 1024 }')"
	if [ -z "$per" ]; then
		echo "  smcr  -c $conns: no sample saw an SMC connection end open (see $samples)"
		keep=1
		return
	fi
	MEM_END[$r]+="$per " MEM_PEAK[$r]+="$mib " MEM_ENDS[$r]+="$e "
	echo "  smcr  -c $conns: most SMC connection ends open: $e, with $mib MiB in use: $per KiB per end" \
		"(bar $(bar_kib) KiB)"
}

# bar_kib: what one SMC connection end may cost at most, in KiB: rmb_size +
# sndbuf_size + 8 (smcr.conf's, in KiB).
bar_kib() {
	awk '$1 == "rmb_size" || $1 == "sndbuf_size" { k += $3 } END { print k + 8 }' "$conf"
}

bench_nginx_many() {
	local side=$1 port=$2 c r state fallbacks samples max=0
	for c in $MANY_CONNS; do [ "$c" -gt "$max" ] && max=$c; done
	nginx_start "$side" "$port" "$max" ||
		{ OUT=; for c in $MANY_CONNS; do put "many.c$c" "$side" ""; done; return; }
	for c in $MANY_CONNS; do
		r=many.c$c
		state=$(smc_state) fallbacks=$(fallbacks_now) samples=$work/memory-c$c-r$run-$side
		# on both sides, so that its CPU (about 5% of the two here) weighs alike
		sampler_start "$samples"
		wrk_put "$r" "$side" "wrk-c$c" "$T_WRK_MANY" prlimit --nofile="$MANY_NOFILE" \
			wrk -t1 -c"$c" --timeout 10s "http://127.0.0.1:$port/100b.bin"
		sampler_stop
		if [ "$side" = smcr ]; then
			many_smc "$r" "$c" "$state" "$fallbacks" "$samples"
		fi
	done
	srv_stop TERM
}

# -- a private smcrd ---------------------------------------------------------------
conf=$work/smcr.conf
cp "$src/conf/smcr.conf" "$conf" 2> /dev/null || : > "$conf"
# shellcheck disable=SC2086
"$build/bin/smcrctl" -c "$conf" set enabled=1 "ip_addr_list=127.0.0.1 ::1" port_range_list=$PORTS \
	max_memory=4096 ${SMCR_BENCH_SET:-} > /dev/null || die "smcrctl set refused the configuration"
setsid prlimit --nofile="$SMCRD_NOFILE" "$build/bin/smcrd" "${smcrd_args[@]}" -f -c "$conf" < /dev/null 2> "$work/smcrd.err" &
daemon=$!
for _ in $(seq 50); do
	"$build/bin/smcrctl" status > /dev/null 2>&1 && break
	kill -0 "$daemon" 2> /dev/null || break
	sleep 0.1
done
"$build/bin/smcrctl" status > /dev/null 2>&1 || { keep=1; die "smcrd did not start: $(cat "$work/smcrd.err")"; }

commit=$(git -C "$src" rev-parse --short HEAD 2> /dev/null)
[ -n "$commit" ] && [ -n "$(git -C "$src" status --porcelain --untracked-files=no 2> /dev/null)" ] && commit+=" (modified)"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
case $mode in
separate) placed="each process where the scheduler puts it" ;;
shared-cpu) placed="every process pinned to CPU 0" ;;
busy-host) placed="a CPU hog on each of the $(nproc) CPUs throughout" ;;
esac
header="smcr against plain TCP on loopback: median of $runs run(s), TCP and smcr alternated
mode $mode: $placed
$(date '+%F %T'), $(uname -sr), $(nproc) CPU(s) ${cpu:+($cpu)}, commit ${commit:-?}
smcr = client and server under LD_PRELOAD=$lib, private smcrd:
       $(sed -nE 's/^(enabled|ip_addr_list|port_range_list|max_memory|rmb_size|sndbuf_size|shm) *= */\1=/p' "$conf" | tr '\n' ' ')
       RLIMIT_NOFILE=$SMCRD_NOFILE: at most $((SMCRD_NOFILE / 8)) SMC connection ends on shared memory at once"
echo "$header"
echo

# -- the runs ------------------------------------------------------------------------
if [ "$mode" = busy-host ]; then
	for _ in $(seq "$(nproc)"); do
		setsid sh -c 'while :; do :; done' < /dev/null > /dev/null 2>&1 &
		live+=($!)
	done
fi
start=$SECONDS
for run in $(seq "$runs"); do
	if [ $((run % 2)) = 1 ]; then order="plain smcr"; else order="smcr plain"; fi
	echo "run $run of $runs (${order/ / first, then })"
	i=0
	for g in "${groups_run[@]}"; do
		case $g in sockperf) i=0 ;; iperf3) i=2 ;; redis) i=4 ;; nginx) i=6 ;; nginx-many) i=8 ;; esac
		for side in $order; do
			p=$((PORT0 + i))
			[ "$side" = smcr ] && p=$((p + 1))
			"bench_${g//-/_}" "$side" "$p"
		done
	done
done
elapsed=$((SECONDS - start))

# -- the report ------------------------------------------------------------------------
median() { tr ' ' '\n' | awk 'NF { v[++n] = $1 } END {
	if (!n) exit; for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
	print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
fmt() { if [ -n "$2" ]; then printf "$1" "$2"; else printf -- -; fi; }

# ratio A B: A / B, or "-".
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else print "-" }'; }

# table_row ROW: the row's medians, each side's CPU per operation and the ratios.
table_row() {
	local r=$1 side
	declare -A mv=() shown=() ps=() pc=() used=()
	for side in plain smcr; do
		mv[$side]=$(echo "${VAL[$r.$side]:-}" | median)
		shown[$side]=$(fmt "${FMT[$r]}" "${mv[$side]}")
		[ "${OK[$r.$side]:-0}" -lt "$runs" ] && shown[$side]+="*"
		ps[$side]=$(echo "${PS[$r.$side]:-}" | median) pc[$side]=$(echo "${PC[$r.$side]:-}" | median)
		used[$side]=-
		[ -z "${pc[$side]}" ] ||
			used[$side]="$(short "${ps[$side]}")/$(short "${pc[$side]}") ${CPU_UNIT[${PER[$r]}]}"
	done
	printf '%-30s %-10s | %9s %-18s | %9s %-18s | %6s %s/%s\n' "${LABEL[$r]}" "${UNIT[$r]}" \
		"${shown[plain]}" "${used[plain]}" "${shown[smcr]}" "${used[smcr]}" \
		"$(ratio "${mv[smcr]}" "${mv[plain]}")" "$(ratio "${ps[smcr]}" "${ps[plain]}")" \
		"$(ratio "${pc[smcr]}" "${pc[plain]}")"
}

# many_report: nginx-many's smcr side, median of the runs: the memory per
# SMC connection end at the peak against the bar, what SMC negotiated, and
# every fallback.
many_report() {
	local r c per bar
	bar=$(bar_kib)
	echo
	echo "Many connections, smcr side (median of the runs): SMC buffer memory in use when the most SMC"
	echo "connection ends were open, per end (both ends on this host), against the bar rmb_size +"
	echo "sndbuf_size + 8 KiB = $bar KiB.  It counts every buffer granted, those of connections that"
	echo "then fell back too:"
	for c in $MANY_CONNS; do
		r=many.c$c
		per=$(echo "${MEM_END[$r]:-}" | median)
		if [ -z "$per" ]; then
			echo "  -c $c: no sample (see the run's log)"
			continue
		fi
		printf '  -c %-5s %7.1f MiB for %5.0f ends: %6.1f KiB per end, %s the bar\n' "$c" \
			"$(echo "${MEM_PEAK[$r]}" | median)" "$(echo "${MEM_ENDS[$r]}" | median)" "$per" \
			"$(awk -v p="$per" -v b="$bar" 'BEGIN { print (p <= b ? "within" : "OVER") }')"
		echo "           SMC negotiated (connects/accepts) per run: ${NEG[$r]% }; fallbacks: ${FB[$r]%; }"
	done
}

table=$work/table.txt
{
	echo "$header"
	echo "cpu/op: user+sys CPU of the server / of the client per operation, median of the runs: per round trip"
	echo "(us/rt), per request (us/req) or per GB moved (s/GB).  Latency: sockperf's, one-way (half the round"
	echo "trip).  smcr/TCP: of the figure (latency: lower is better; the rest: higher), and of cpu/op for"
	echo "server/client (lower is better).  * = fewer than $runs valid runs (see logs)."
	echo
	printf '%-30s %-10s | %9s %-18s | %9s %-18s | %s\n' "" "" "TCP" "" "smcr" "" "smcr/TCP"
	printf '%-30s %-10s | %9s %-18s | %9s %-18s | %6s %s\n' "benchmark" "unit" "" "cpu/op srv/cli" \
		"" "cpu/op srv/cli" "figure" "cpu/op srv/cli"
	printf '%s\n' "$(printf '%.0s-' $(seq 124))"
	for r in "${ROWS[@]}"; do table_row "$r"; done
	[[ " ${groups_run[*]} " != *" nginx-many "* ]] || many_report
	for s in "${skipped[@]}"; do echo "skipped: $s"; done
	echo "($elapsed s for $runs run(s))"
} > "$table"

# Which path the preloaded connections took.
stats=$("$build/bin/smcrctl" stats 2>&1)
echo
echo "== smcrctl stats (the smcr side: its servers and clients, every run)"
echo "$stats"
said=$(grep -l '^libsmcr' "$work"/*.err "$work"/*.server 2> /dev/null | wc -l)
if [ "$said" -gt 0 ]; then
	echo "libsmcr printed messages in $said log(s): $work/*.err, *.server"
	keep=1
fi
echo
cat "$table"
{
	cat "$table"
	echo
	echo "== every run (value; server/client CPU s; server/client CPU per operation)"
	for r in "${ROWS[@]}"; do
		for side in plain smcr; do
			printf '%-31s %-5s values: %s\n' "${LABEL[$r]}" "${side/plain/TCP}" "${VAL[$r.$side]:-}"
			printf '%-31s %-5s cpu:    srv %s/ cli %s\n' "" "" "${CS[$r.$side]:-}" "${CC[$r.$side]:-}"
			printf '%-31s %-5s per op: srv %s/ cli %s(%s)\n' "" "" "${PS[$r.$side]:-}" "${PC[$r.$side]:-}" \
				"${CPU_UNIT[${PER[$r]}]}"
		done
	done
	echo
	echo "== smcrctl stats"
	echo "$stats"
} > "$out_file"
echo "(written to $out_file)"
