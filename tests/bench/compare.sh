#!/bin/bash
# compare.sh BUILD_DIR [RUNS] - plain TCP against smcr on loopback, with real
# programs.  Each client and server runs twice: plainly ("TCP"), and both
# under LD_PRELOAD=BUILD_DIR/lib/libsmcr.so ("smcr") with a private smcrd
# (SMCR_RUNDIR in a temporary directory; enabled = 1, ip_addr_list =
# 127.0.0.1 ::1, port_range_list = the ports below, max_memory = 4096):
#
#   sockperf ping-pong, 14 B and 1 KiB, 3 s at up to 100000 messages/s: p50 and p99 of the latency as
#            sockperf prints it, i.e. one-way = half the round trip (us)
#   sockperf throughput, 65536-byte messages, 3 s: MB/s as sockperf prints it
#   iperf3   one stream, 5 s: Gbit/s received
#   redis    redis-benchmark against redis-server, SET then GET, -c 1
#            (-n 50000) and -c 50 (-n 250000): requests/s
#   nginx    1 worker, access_log off, sendfile on; wrk -t1 -c10 -d5s on a
#            100-byte and a 1 MiB file: requests/s
#
# Every run measures every benchmark on both sides, TCP first in odd runs and
# smcr first in even ones, so that drift hits both alike; the table gives the
# median of RUNS (default 5) for each side, the ratio smcr/TCP, and beside
# each figure the CPU time (user+sys, seconds, median) of the server and of
# the client during the measurement: the server's from utime+stime in
# /proc/PID/stat of all its processes (its process group: nginx's master and
# worker) read just before and just after the client ran; the client's from
# bash's `time` (getrusage of the client and its children once reaped).
# smcrd runs during the TCP runs too: those programs are not preloaded, so
# their SYNs carry no option and their sockets nothing of smcr.
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
N_REDIS_C1=50000
N_REDIS_C50=250000
PORT0=17500     # sockperf 17500/1, iperf3 17502/3, redis 17504/5, nginx 17506/7 (TCP/smcr)
PORTS=17500-17509

# -- what is needed -----------------------------------------------------------
die() { echo "$(basename "$0"): $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (smcrd loads a BPF program)"
for f in "$lib" "$build/bin/smcrd" "$build/bin/smcrctl"; do
	[ -e "$f" ] || die "$f is missing: build first (cmake -S $src -B $build && cmake --build $build)"
done
for prog in setsid timeout pgrep awk sed; do
	command -v "$prog" > /dev/null || die "$prog is missing (procps, coreutils, util-linux)"
done
PATH=$PATH:/usr/sbin:/usr/local/sbin    # nginx
declare -A NEEDS=([sockperf]="sockperf" [iperf3]="iperf3"
	[redis]="redis-server redis-benchmark" [nginx]="nginx wrk")
GROUPS_ALL=(sockperf iperf3 redis nginx)
groups_run=() missing=() skipped=()
for g in ${SMCR_BENCH_ONLY:-${GROUPS_ALL[*]}}; do
	[ -n "${NEEDS[$g]:-}" ] || die "SMCR_BENCH_ONLY: no benchmark group $g (${GROUPS_ALL[*]})"
	m=()
	for prog in ${NEEDS[$g]}; do command -v "$prog" > /dev/null || m+=("$prog"); done
	if [ ${#m[@]} = 0 ]; then groups_run+=("$g"); else missing+=("${m[@]}"); skipped+=("$g (missing ${m[*]})"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "missing: ${missing[*]} - skipping: ${skipped[*]}" >&2
	echo "(Debian: apt-get install sockperf iperf3 redis-server redis-tools nginx-light wrk)" >&2
fi
[ ${#groups_run[@]} -gt 0 ] || die "nothing to run"
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
daemon='' SRV='' keep=0
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
ROWS=()
declare -A LABEL UNIT BETTER FMT VAL CS CC OK
row() { ROWS+=("$1"); LABEL[$1]=$2; UNIT[$1]=$3; BETTER[$1]=$4; FMT[$1]=$5; }
for g in "${groups_run[@]}"; do
	case $g in
	sockperf)
		row pp14.p50 "sockperf ping-pong 14 B, p50" "us one-way" lower %.2f
		row pp14.p99 "sockperf ping-pong 14 B, p99" "us one-way" lower %.2f
		row pp1024.p50 "sockperf ping-pong 1 KiB, p50" "us one-way" lower %.2f
		row pp1024.p99 "sockperf ping-pong 1 KiB, p99" "us one-way" lower %.2f
		row tp "sockperf throughput 64 KiB" "MB/s" higher %.0f ;;
	iperf3)
		row iperf3 "iperf3, 1 stream, ${T_IPERF} s" "Gbit/s" higher %.2f ;;
	redis)
		row redis.c1.set "redis-benchmark -c 1 SET" "req/s" higher %.0f
		row redis.c1.get "redis-benchmark -c 1 GET" "req/s" higher %.0f
		row redis.c50.set "redis-benchmark -c 50 SET" "req/s" higher %.0f
		row redis.c50.get "redis-benchmark -c 50 GET" "req/s" higher %.0f ;;
	nginx)
		row nginx.100 "nginx+wrk 100 B file" "req/s" higher %.0f
		row nginx.1m "nginx+wrk 1 MiB file" "req/s" higher %.0f ;;
	esac
done

# put ROW SIDE VALUE: one measurement (an empty or non-numeric VALUE is a
# failure: counted, logs kept), with the CPU_S and CPU_C of the last cli.
put() {
	local r=$1 side=$2 v=$3
	if [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
		VAL[$r.$side]+="$v " CS[$r.$side]+="$CPU_S " CC[$r.$side]+="$CPU_C "
		OK[$r.$side]=$((${OK[$r.$side]:-0} + 1))
		printf '  %-5s %-31s %10s %-10s cpu srv %5s s, cli %5s s\n' "${side/plain/TCP}" "${LABEL[$r]}" \
			"$(printf "${FMT[$r]}" "$v")" "${UNIT[$r]}" "$CPU_S" "$CPU_C"
	else
		printf '  %-5s %-31s FAILED (see %s)\n' "${side/plain/TCP}" "${LABEL[$r]}" "${OUT:-the server log}"
		keep=1
	fi
}

# num FILE SED-REGEX: the first number captured by the extended regex in FILE.
num() { sed -nE "s#$2#\1#p" "$1" 2> /dev/null | head -n 1; }

bench_sockperf() {
	local side=$1 port=$2 m p50 p99 bw
	srv_start "$side" sockperf "$port" sockperf server --tcp -i 127.0.0.1 -p "$port" -m 65536 --uc-reuseaddr ||
		{ OUT=; for m in 14 1024; do put "pp$m.p50" "$side" ""; put "pp$m.p99" "$side" ""; done; put tp "$side" ""; return; }
	for m in 14 1024; do
		p50='' p99=''
		# paced, both sides alike: unpaced, a sub-microsecond round trip overruns
		# sockperf's table of sequence numbers ("_seqN > m_maxSequenceNo")
		if cli "$side" "sockperf-pp$m" 30 sockperf ping-pong --tcp -i 127.0.0.1 -p "$port" \
			-t "$T_SOCKPERF" -m "$m" --mps "$PP_MPS"; then
			p50=$(num "$OUT" '.*percentile 50\.000 = *([0-9.]+).*')
			p99=$(num "$OUT" '.*percentile 99\.000 = *([0-9.]+).*')
		fi
		put "pp$m.p50" "$side" "$p50"
		put "pp$m.p99" "$side" "$p99"
	done
	bw=
	if cli "$side" sockperf-tp 30 sockperf throughput --tcp -i 127.0.0.1 -p "$port" -t "$T_SOCKPERF" -m 65536; then
		bw=$(num "$OUT" '.*Summary: BandWidth is ([0-9.]+) MBps.*')
	fi
	put tp "$side" "$bw"
	srv_stop INT
}

bench_iperf3() {
	local side=$1 port=$2 v=
	srv_start "$side" iperf3 "$port" iperf3 -s -p "$port" || { OUT=; put iperf3 "$side" ""; return; }
	if cli "$side" iperf3 $((T_IPERF + 25)) iperf3 -c 127.0.0.1 -p "$port" -t "$T_IPERF" -f m; then
		v=$(awk '/receiver/ { for (i = 2; i <= NF; i++) if ($i == "Mbits/sec") printf "%.3f\n", $(i - 1) / 1000 }' "$OUT" | head -n 1)
	fi
	put iperf3 "$side" "$v"
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
			put "redis.c$c.$t" "$side" "$v"
		done
	done
	srv_stop TERM
}

nginx_conf() {    # nginx_conf PORT: a private configuration in $work/nginx
	local d=$work/nginx
	mkdir -p "$d/www" "$d/tmp"
	[ -e "$d/www/100b.bin" ] || head -c 100 /dev/urandom > "$d/www/100b.bin"
	[ -e "$d/www/1m.bin" ] || head -c 1048576 /dev/urandom > "$d/www/1m.bin"
	chmod -R a+rX "$d"
	cat > "$d/nginx-$1.conf" << CONF
worker_processes 1;
daemon off;
master_process on;
pid $d/nginx-$1.pid;
error_log $d/error-$1.log warn;
events { worker_connections 1024; }
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
		listen 127.0.0.1:$1;
		root $d/www;
	}
}
CONF
	echo "$d/nginx-$1.conf"
}

bench_nginx() {
	local side=$1 port=$2 conf f r v
	conf=$(nginx_conf "$port")
	srv_start "$side" nginx "$port" nginx -p "$work/nginx" -e "$work/nginx/error-$port.log" -c "$conf" ||
		{ OUT=; put nginx.100 "$side" ""; put nginx.1m "$side" ""; return; }
	for f in 100b 1m; do
		r=nginx.100
		[ "$f" = 1m ] && r=nginx.1m
		v=
		if cli "$side" "wrk-$f" $((T_WRK + 25)) wrk -t1 -c10 -d"${T_WRK}s" "http://127.0.0.1:$port/$f.bin"; then
			if grep -qE 'Socket errors|Non-2xx' "$OUT"; then
				echo "  wrk ($side): $(grep -E 'Socket errors|Non-2xx' "$OUT" | tr '\n' ' ')"
			else
				v=$(num "$OUT" '^Requests/sec: *([0-9.]+).*')
			fi
		fi
		put "$r" "$side" "$v"
	done
	srv_stop TERM
}

# -- a private smcrd ---------------------------------------------------------------
conf=$work/smcr.conf
cp "$src/conf/smcr.conf" "$conf" 2> /dev/null || : > "$conf"
# shellcheck disable=SC2086
"$build/bin/smcrctl" -c "$conf" set enabled=1 "ip_addr_list=127.0.0.1 ::1" port_range_list=$PORTS \
	max_memory=4096 ${SMCR_BENCH_SET:-} > /dev/null || die "smcrctl set refused the configuration"
setsid "$build/bin/smcrd" "${smcrd_args[@]}" -f -c "$conf" < /dev/null 2> "$work/smcrd.err" &
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
       $(sed -nE 's/^(enabled|ip_addr_list|port_range_list|max_memory|rmb_size|sndbuf_size|shm) *= */\1=/p' "$conf" | tr '\n' ' ')"
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
		case $g in sockperf) i=0 ;; iperf3) i=2 ;; redis) i=4 ;; nginx) i=6 ;; esac
		for side in $order; do
			p=$((PORT0 + i))
			[ "$side" = smcr ] && p=$((p + 1))
			"bench_$g" "$side" "$p"
		done
	done
done
elapsed=$((SECONDS - start))

# -- the report ------------------------------------------------------------------------
median() { tr ' ' '\n' | awk 'NF { v[++n] = $1 } END {
	if (!n) exit; for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
	print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
fmt() { if [ -n "$2" ]; then printf "$1" "$2"; else printf -- -; fi; }

table=$work/table.txt
{
	echo "$header"
	echo "CPU: user+sys seconds (median) of the server / the client processes during the measurement."
	echo "Latency: sockperf's, one-way (half the round trip).  * = fewer than $runs valid runs (see logs)."
	echo
	printf '%-31s %-10s | %10s %11s | %10s %11s | %s\n' "" "" "TCP" "cpu" "smcr" "cpu" "smcr/TCP (latency:"
	printf '%-31s %-10s | %10s %11s | %10s %11s | %s\n' "benchmark" "unit" "" "srv/cli" "" "srv/cli" "lower is better)"
	printf '%s\n' "$(printf '%.0s-' $(seq 118))"
	for r in "${ROWS[@]}"; do
		declare -A mv=() shown=() used=()
		for side in plain smcr; do
			mv[$side]=$(echo "${VAL[$r.$side]:-}" | median)
			shown[$side]=$(fmt "${FMT[$r]}" "${mv[$side]}")
			[ "${OK[$r.$side]:-0}" -lt "$runs" ] && shown[$side]+="*"
			used[$side]=$(fmt %.2f "$(echo "${CS[$r.$side]:-}" | median)")/$(fmt %.2f "$(echo "${CC[$r.$side]:-}" | median)")
			[ "${OK[$r.$side]:-0}" = 0 ] && used[$side]=-
		done
		ratio=-
		if [ -n "${mv[plain]}" ] && [ -n "${mv[smcr]}" ]; then
			ratio=$(awk -v a="${mv[smcr]}" -v b="${mv[plain]}" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')
		fi
		printf '%-31s %-10s | %10s %11s | %10s %11s | %s (%s is better)\n' "${LABEL[$r]}" "${UNIT[$r]}" \
			"${shown[plain]}" "${used[plain]}" "${shown[smcr]}" "${used[smcr]}" "$ratio" "${BETTER[$r]}"
	done
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
	echo "== every run (value; server/client CPU s)"
	for r in "${ROWS[@]}"; do
		for side in plain smcr; do
			printf '%-31s %-5s values: %s\n' "${LABEL[$r]}" "${side/plain/TCP}" "${VAL[$r.$side]:-}"
			printf '%-31s %-5s cpu:    srv %s/ cli %s\n' "" "" "${CS[$r.$side]:-}" "${CC[$r.$side]:-}"
		done
	done
	echo
	echo "== smcrctl stats"
	echo "$stats"
} > "$out_file"
echo "(written to $out_file)"
