#!/bin/bash
# guest-onehost.sh BUILD_DIR DEVICE ADDR TEST... - one guest's tests, run by
# run.sh through guest-setup.sh (which made DEVICE, rxe0 or siw0, on ADDR).
#
# Owns what one guest checks:
#   - the verbs device is there (ibv_devices) and moves data: ib_write_bw and
#     ib_write_lat (connected through rdma_cm, -R, as both RoCE and iWARP
#     allow), client and server on the same device, at 64 KiB and at a small
#     size, and ib_send_lat with a CDC's 44 bytes; their output is kept in /out/perf-*.log for run.sh's figures;
#   - the RDMA transport works between two processes (rdma_peer), and a
#     peer cannot write with a dead connection's rkey (stale_rkey);
#   - the integration tests TEST... (tests/integration/TEST.sh) pass against
#     BUILD_DIR on this guest's kernel (each starts its own smcrd, whose BPF
#     program needs cgroup v2).  A TEST named NAME-rdma runs NAME.sh with
#     SMCR_TEST_ADDR=ADDR SMCR_TEST_TRANSPORT=rdma (tests/integration/lib.sh):
#     smcrd with shm = 0, servers and clients on ADDR, so that the
#     connections under the preload must go over DEVICE through the RDMA
#     transport, counted as such by smcrctl stats; with smaller sizes than on
#     a real CPU (RDMA_SIZES below: TCG moves 10-50 MB/s over rxe or siw).
#     A TEST named NAME-shm runs NAME.sh with SMCR_TEST_TRANSPORT=shm, as
#     CTest's integration.NAME-shm does (smcrd runs, on loopback).
. "$(dirname "$0")/guest-lib.sh"
build=${1:?usage: $0 BUILD_DIR DEVICE ADDR TEST...} dev=${2:?} addr=${3:?}
shift 3

check ibv_devices 20 bash -c "ibv_devices | tee /dev/stderr | grep -qw $dev"

# perf TEST SIZE ITERS: server and client of a perftest program on $dev.
# Tried up to 3 times: perftest itself fails now and then on a busy TCG
# host - it cannot measure the CPU clock (its linear fit of the cycle
# counter, "Correlation coefficient r^2", and the figures come out as
# "inf"; -F lets both sides finish all the same), or its siw client dies
# (SIGSEGV seen once in ib_write_bw at 64 B) and leaves the server waiting.
# Three failures in a row count.
perf() {
	local name=perf-$1-$2 srv try rc srv_rc
	for try in 1 2 3; do
		timeout -k 5 60 stdbuf -oL "$1" -d "$dev" -R -F -s "$2" -n "$3" > "/out/$name-server.log" 2>&1 &
		srv=$!
		if ! wait_for "/out/$name-server.log" "Waiting for client" 20; then
			kill "$srv" 2>/dev/null; wait "$srv"
			rc="server did not start: $(tail -n 2 "/out/$name-server.log")"
			continue
		fi
		timeout -k 5 90 "$1" -d "$dev" -R -F -s "$2" -n "$3" "$addr" > "/out/$name.log" 2>&1
		rc=$?
		wait "$srv"
		srv_rc=$?
		[ "$rc" = 0 ] && [ "$srv_rc" = 0 ] && ! grep -qF 'r^2' "/out/$name.log" && break
		echo "$name: perftest failed (client $rc, server $srv_rc; try $try)"
		[ "$rc" = 0 ] && rc="server exit status $srv_rc"
	done
	tail -n 3 "/out/$name.log"
	[ "$rc" = 0 ] && record "$name" OK || record "$name" FAIL "$rc"
}
perf ib_write_bw 65536 2000
perf ib_write_bw 64 10000
perf ib_write_lat 65536 500
perf ib_write_lat 8 2000
perf ib_send_lat 44 2000	# a CDC: with a WRITE, what RFC 7609 sends per message

# integration NAME [VAR=VALUE...]: tests/integration/NAME.sh (NAME-rdma,
# NAME-shm: NAME.sh over RDMA or shm, see above) with these variables; the scratch directory
# it keeps when it fails is copied to /out/NAME-work (without its .bin data
# files).
RDMA_SIZES=(STRESS_CONNS=48 STRESS_MAX_BYTES=262144 SOCAT_MIB=8 IPERF3_MIB=16 REDIS_N=2000 KILL_SECS=30)
integration() {
	local name=$1 test=$1 kept
	shift
	case $name in
		*-rdma) test=${name%-rdma}
			set -- SMCR_TEST_ADDR="$addr" SMCR_TEST_TRANSPORT=rdma "${RDMA_SIZES[@]}" "$@" ;;
		*-shm) test=${name%-shm}
			set -- SMCR_TEST_TRANSPORT=shm "$@" ;;
	esac
	check "$name" 500 env "$@" "$REPO/tests/integration/$test.sh" "$build" && return
	kept=$(sed -n 's/^(kept \(.*\) for inspection)$/\1/p' "/out/$name.log")
	[ -d "$kept" ] || return 0
	mkdir -p "/out/$name-work"
	tar -C "$kept" --exclude='*.bin' -cf - . | tar -C "/out/$name-work" -xf -
}
# The RDMA transport between two processes (tests/progs/rdma_peer.c): its
# checks (16 MiB stream, link reuse, half-close, abort, link counters, fork
# with a live connection and idle links torn down in the child, SIGKILL,
# nothing left) and figures; here the device exists, so a skip (77) fails too.
check rdma_peer 600 "$build/bin/rdma_peer" "$addr" 200 16
# A peer that writes with the rkey of its closed connection into the buffer
# another process's connection got next loses its link, and those bytes stay
# the other connection's (rdma_peer --stale-key; issue 15).
check stale_rkey 120 "$build/bin/rdma_peer" --stale-key "$addr"
export STRESS_TIMEOUT=120       # stress.sh's 20 s are for a real CPU, not TCG on a busy host
for test in "$@"; do
	integration "$test"
done
guest_finish
