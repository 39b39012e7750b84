#!/bin/bash
# stress.sh BUILD_DIR - every byte of many concurrent connections, through
# every send and receive call and every I/O model, plainly and under
# libsmcr.so.
#
# tests/progs/stress is an echo server and a client whose connections each
# send a pseudo-random stream of up to 1 MiB in pieces of 1 byte to 256 KiB
# (write, send, writev, sendmsg, MSG_MORE), half-close, and check every byte
# of the echo (read, recv, readv, recvmsg, MSG_WAITALL, MSG_PEEK; a blocking
# MSG_WAITALL must return all it asked for unless the echo ends first); one
# connection in 8 closes early instead, a reset for the server.  200
# connections, 16 at a time:
#   plain TCP, server epoll
#   under the preload with a private smcrd, once per server I/O model
#   (blocking, poll, select, epoll, epollet), each with another client model
#   but select (select on both sides); one over ::1 (over $SMCR_TEST_ADDR
#   too, if that is not loopback)
# Each run: both exit 0 and agree on connections, early closes (resets) and
# bytes.  Under the preload: libsmcr saw every connection, and smcrctl stats
# --json shows that each negotiated SMC (smc_clients, smc_servers) and took
# the transport under test (lib.sh's on_transport: shm by default, rdma with
# SMCR_TEST_TRANSPORT=rdma), none falling back.  The servers listen on
# $SMCR_TEST_ADDR (lib.sh; 127.0.0.1 by default).  Each program gives up
# after 20 s (STRESS_TIMEOUT=S for slow machines, such as tests/vm's emulated
# guests): a hang fails the run.  STRESS_SEED=S changes the streams;
# STRESS_CONNS (200) and STRESS_MAX_BYTES (1 MiB) the connections per run
# and the most one sends.  Root (smcrd loads a BPF program).
. "$(dirname "$0")/lib.sh" "$1"
[ "$(id -u)" = 0 ] || { fail "needs root (smcrd loads a BPF program)"; finish; }
[ -x "$BIN/stress" ] || { fail "$BIN/stress not built"; finish; }

N=${STRESS_CONNS:-200}
P=16
MAX=${STRESS_MAX_BYTES:-$((1024 * 1024))}
SEED=${STRESS_SEED:-20240611}
TIMEOUT=${STRESS_TIMEOUT:-20}
echo "seed $SEED"
# The servers' address: --v6 (::1) for the run that says so, else this.
where=()
[ "$TEST_ADDR" = 127.0.0.1 ] || where=(--addr "$TEST_ADDR")

# grew WHAT COUNTER BEFORE: COUNTER of smcrctl stats --json grew by $N since BEFORE.
grew() {
	local now was=$3 note=
	now=$(stats_counter "$2")
	case $now in
		none) note=" (smcrctl stats --json has no $2)" ;;
		'') note=" (smcrctl stats --json did not answer)" ;;
	esac
	[[ $now =~ ^[0-9]+$ ]] || now=0
	[[ $was =~ ^[0-9]+$ ]] || was=0
	if [ $((now - was)) = "$N" ]; then
		pass "$1: $2 grew by $N"
	else
		fail "$1: $2 grew by $((now - was)), expected $N$note"
	fi
}

COUNTERS=(smc_clients smc_servers)

# run MODE SERVER_IO CLIENT_IO PORT [--v6]: one server and one client.
run() {
	local mode=$1 sio=$2 cio=$3 port=$4 srv rc start secs c s k
	shift 4
	local name=$mode-$sio-$cio${1:+-v6}           # server I/O model, then the client's
	[ $# -gt 0 ] || set -- "${where[@]}"
	local cout=$WORK/client-$name.out cerr=$WORK/client-$name.err
	local -A before
	start_bg "server-$name" "$mode" "$BIN/stress" server "$port" --conns "$N" --io="$sio" --timeout "$TIMEOUT" "$@"
	srv=$LAST_PID
	wait_listen "$port" "$srv" || return
	if [ "$mode" = smcr ]; then
		for k in "${COUNTERS[@]}"; do before[$k]=$(stats_counter "$k"); done
	fi
	start=$EPOCHREALTIME
	run_mode "$mode" "$BIN/stress" client "$port" --conns "$N" --parallel "$P" --max-bytes "$MAX" \
		--seed "$SEED" --io="$cio" --timeout "$TIMEOUT" "$@" > "$cout" 2> "$cerr"
	rc=$?
	secs=$(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $start }")
	if [ "$rc" = 0 ]; then
		pass "$name: client exit status 0 (${secs} s)"
	else
		fail "$name: client exit status $rc: $(grep -m 3 '^stress' "$cerr")"
	fi
	stop_bg "$srv" - 10
	rc=$?
	[ "$rc" = 0 ] && pass "$name: server exit status 0" ||
		fail "$name: server exit status $rc: $(grep -m 3 '^stress' "$WORK/server-$name.err")"

	c=$(sed -nE 's/^stress client: ([0-9]+) connections \(([0-9]+) early closes\), ([0-9]+) bytes verified$/\1 connections, \2 early closes, \3 bytes/p' "$cout")
	s=$(sed -nE 's/^stress server: ([0-9]+) connections \(([0-9]+) reset\), ([0-9]+) bytes echoed$/\1 connections, \2 early closes, \3 bytes/p' "$WORK/server-$name.out")
	case $c in
		"$N connections, "*) expect_eq "$name: the server echoed what the client verified" "${s:-no summary}" "$c" ;;
		*) fail "$name: client summary '${c:-none}', expected $N connections" ;;
	esac

	libsmcr_saw "$name" "$mode" stress "$srv" "$N" || return 0
	for k in "${COUNTERS[@]}"; do grew "$name" "$k" "${before[$k]}"; done
	# Every connection, and at least the echo the client verified.
	k=$(sed -nE 's/.* early closes, ([0-9]+) bytes$/\1/p' <<< "$c")
	on_transport "$name" "$N" "${k:-1}"
}

run plain epoll blocking 17510

start_smcrd 17500-17509 256

run smcr blocking epollet 17500
if [ "${#where[@]}" = 0 ]; then
	run smcr poll epoll 17501 --v6
else                                    # ::1 cannot reach an RDMA device
	run smcr poll epoll 17501
fi
run smcr epoll blocking 17502
run smcr epollet poll 17503
run smcr select select 17504

kill -0 "$SMCRD_PID" 2> /dev/null && pass "smcrd still running" || fail "smcrd died: $(cat "$WORK/smcrd.err")"
stop_bg "$SMCRD_PID" TERM 10
finish
