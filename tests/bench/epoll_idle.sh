#!/bin/bash
# epoll_idle.sh BUILD_DIR [RUNS] - whether idle members make epoll_wait cost
# more: 10 active connections echo 64-byte messages, one in flight each,
# beside 0 and beside 5,000 idle connections, every connection of each side
# in one epoll instance (bench/epoll_idle.c: a server, and a client that
# counts round trips for 3 s).  Each setting runs over plain TCP and over
# smcr (both sides preloaded, a private smcrd, shared memory), TCP first in
# odd runs and smcr first in even ones; the table gives the median of RUNS
# (default 3) of round trips per second and of the CPU time (user + system)
# per round trip of the client and of the server, the ratio smcr/TCP, and
# for each the ratio 5,000 idle / 0 idle.
#
# Warm-up.  The client counts after 0.5 s (SMCR_BENCH_WARMUP: seconds).
# Idle members of a large set go quiet after 256 looks with nothing to
# report (libsmcr/shim/epoll.c), and the client adds its 5,000 before its
# first epoll_wait: on a slow CPU (a TCG guest) those looks take seconds,
# which a short warm-up counts as the cost of every round trip.
#
# Memory: every SMC connection holds an RMB at each end; with rmb_size = 16
# (KiB, set here) 5,010 connections hold 5,010 * 2 * 16 KiB = 157 MiB of
# smcrd's max_memory (1024 MB here), where the default 256 KiB would need
# 2.5 GiB.  Descriptors: each SMC connection holds its wake-up channel and
# the peer's beside its socket (about 4 per connection), and smcrd offers
# at most RLIMIT_NOFILE / 8 buffers (two per connection): RLIMIT_NOFILE is
# raised to its hard limit, which must be above 40,100 for 5,000 idle
# connections; where it cannot be, SMCR_BENCH_IDLE sets fewer (the script
# warns if connections fell back to TCP).
# A benchmark, not a test (CI never runs it).  Needs root (smcrd loads a BPF
# program); with SMCR_TEST_CGROUP (a cgroup v2 directory) it runs there and
# smcrd attaches its program there.  Ports 24000-24001.  About 40 s per run.
set -u -o pipefail
usage="usage: $0 BUILD_DIR [RUNS]"
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "$usage" >&2; exit 2; }
build=$(cd "$1" 2> /dev/null && pwd) || { echo "$0: no directory $1" >&2; exit 2; }
runs=${2:-3}
case $runs in '' | *[!0-9]* | 0) echo "$usage (RUNS: a positive number)" >&2; exit 2 ;; esac
case ${SMCR_BENCH_WARMUP:-0.5} in '' | *[!0-9.]*) echo "$0: SMCR_BENCH_WARMUP: seconds, a number" >&2; exit 2 ;; esac
lib=$build/lib/libsmcr.so
prog=$build/bin/bench_epoll_idle
ACTIVE=10 IDLE=${SMCR_BENCH_IDLE:-5000} SECONDS_RUN=3 WARMUP=${SMCR_BENCH_WARMUP:-0.5}
PORT_TCP=24000 PORT_SMCR=24001

die() { echo "$(basename "$0"): $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (smcrd loads a BPF program)"
for f in "$lib" "$prog" "$build/bin/smcrd" "$build/bin/smcrctl"; do
	[ -e "$f" ] || die "$f is missing: build first"
done
ulimit -n "$(ulimit -Hn)" || die "cannot raise RLIMIT_NOFILE"
smcrd_args=()
if [ -n "${SMCR_TEST_CGROUP:-}" ]; then
	echo $$ > "$SMCR_TEST_CGROUP/cgroup.procs" || die "cannot run in cgroup $SMCR_TEST_CGROUP"
	smcrd_args=(-C "$SMCR_TEST_CGROUP")
elif pgrep -x smcrd > /dev/null; then
	die "another smcrd is running: only one may run at the root cgroup; give SMCR_TEST_CGROUP"
fi

work=$(mktemp -d /tmp/smcr-epoll-idle.XXXXXX)
export SMCR_RUNDIR=$work
daemon='' server=''
cleanup() {
	[ -z "$server" ] || { kill "$server" 2> /dev/null; wait "$server" 2> /dev/null; }
	[ -z "$daemon" ] || { kill "$daemon" 2> /dev/null; wait "$daemon" 2> /dev/null; }
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

conf=$work/smcr.conf
cp "$(dirname "$0")/../../conf/smcr.conf" "$conf"
"$build/bin/smcrctl" -c "$conf" set enabled=1 ip_addr_list=127.0.0.1 \
	port_range_list=$PORT_SMCR max_memory=1024 max_memory_per_process=100 \
	rmb_size=16 sndbuf_size=16 > /dev/null || die "smcrctl set failed"
"$build/bin/smcrd" "${smcrd_args[@]}" -f -c "$conf" 2> "$work/smcrd.err" &
daemon=$!
for _ in $(seq 50); do "$build/bin/smcrctl" status > /dev/null 2>&1 && break; sleep 0.1; done
"$build/bin/smcrctl" status > /dev/null 2>&1 || die "smcrd did not start: $(cat "$work/smcrd.err")"

# one MODE IDLE: one measurement, "ROUND_TRIPS_PER_S CLIENT_US SERVER_US"
one() {
	local mode=$1 idle=$2 port=$PORT_TCP pre=() out
	[ "$mode" = smcr ] && port=$PORT_SMCR pre=(env "LD_PRELOAD=$lib")
	"${pre[@]}" "$prog" serve "$port" epoll > "$work/server.out" 2> "$work/server.err" &
	server=$!
	for _ in $(seq 50); do grep -q listening "$work/server.out" && break; sleep 0.1; done
	out=$("${pre[@]}" "$prog" run "$port" $ACTIVE "$idle" $SECONDS_RUN "$server" "$WARMUP" \
		2> "$work/client.err") ||
		die "$mode, $idle idle: the client failed: $(tail -n 3 "$work/client.err")"
	kill "$server"
	wait "$server" 2> /dev/null
	server=''
	echo "$out"
}

declare -A fig
for r in $(seq "$runs"); do
	order="tcp smcr"
	[ $((r % 2)) = 0 ] && order="smcr tcp"
	for idle in 0 $IDLE; do
		for mode in $order; do
			read -r rt cu su <<< "$(one "$mode" "$idle")"
			fig[$mode.$idle.rt]+="$rt " fig[$mode.$idle.cu]+="$cu " fig[$mode.$idle.su]+="$su "
			echo "run $r: $mode, $idle idle: $rt round trips/s, client $cu us, server $su us per round trip"
		done
	done
done
fallbacks=$("$build/bin/smcrctl" stats | sed -nE 's/^ *Fallbacks to TCP: *([0-9]+).*/\1/p')
[ "${fallbacks:-x}" = 0 ] ||
	echo "WARNING: ${fallbacks:-?} connection ends fell back to TCP (smcrctl stats):" \
		"the smcr figures mix TCP in; lower SMCR_BENCH_IDLE"

median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }
printf '\n%-22s %12s %12s %12s\n' "median of $runs" "round trips/s" "client us/op" "server us/op"
for idle in 0 $IDLE; do
	for mode in tcp smcr; do
		declare "m_${mode}_${idle}_rt=$(echo "${fig[$mode.$idle.rt]}" | median)"
		declare "m_${mode}_${idle}_cu=$(echo "${fig[$mode.$idle.cu]}" | median)"
		declare "m_${mode}_${idle}_su=$(echo "${fig[$mode.$idle.su]}" | median)"
		v=(m_${mode}_${idle}_rt m_${mode}_${idle}_cu m_${mode}_${idle}_su)
		printf '%-22s %12s %12s %12s\n' "$mode, $idle idle" "${!v[0]}" "${!v[1]}" "${!v[2]}"
	done
	a=(m_smcr_${idle}_rt m_tcp_${idle}_rt m_smcr_${idle}_cu m_tcp_${idle}_cu m_smcr_${idle}_su m_tcp_${idle}_su)
	printf '%-22s %12s %12s %12s\n' "smcr/TCP, $idle idle" "$(ratio "${!a[0]}" "${!a[1]}")" \
		"$(ratio "${!a[2]}" "${!a[3]}")" "$(ratio "${!a[4]}" "${!a[5]}")"
done
for mode in tcp smcr; do
	a=(m_${mode}_${IDLE}_rt m_${mode}_0_rt m_${mode}_${IDLE}_cu m_${mode}_0_cu m_${mode}_${IDLE}_su m_${mode}_0_su)
	printf '%-22s %12s %12s %12s\n' "$mode, $IDLE/0 idle" "$(ratio "${!a[0]}" "${!a[1]}")" \
		"$(ratio "${!a[2]}" "${!a[3]}")" "$(ratio "${!a[4]}" "${!a[5]}")"
done
