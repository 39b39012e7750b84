#!/bin/bash
# guest-onehost.sh BUILD_DIR DEVICE ADDR - one guest's tests, run by run.sh
# through guest-setup.sh (which made DEVICE, rxe0 or siw0, on ADDR).
#
# Owns what one guest checks:
#   - the verbs device is there (ibv_devices) and moves data: ib_write_bw and
#     ib_write_lat (connected through rdma_cm, -R, as both RoCE and iWARP
#     allow), client and server on the same device, at 64 KiB and at a small
#     size; their output is kept in /out/perf-*.log for run.sh's figures;
#   - the integration tests socat.sh and stress.sh pass against BUILD_DIR on
#     this guest's kernel (each starts its own smcrd, whose BPF program needs
#     cgroup v2).
. "$(dirname "$0")/guest-lib.sh"
build=${1:?usage: $0 BUILD_DIR DEVICE ADDR} dev=${2:?} addr=${3:?}

check ibv_devices 20 bash -c "ibv_devices | tee /dev/stderr | grep -qw $dev"

# perf TEST SIZE ITERS: server and client of a perftest program on $dev.
perf() {
	local name=perf-$1-$2 srv
	timeout -k 5 60 stdbuf -oL "$1" -d "$dev" -R -s "$2" -n "$3" > "/out/$name-server.log" 2>&1 &
	srv=$!
	if ! wait_for "/out/$name-server.log" "Waiting for client" 20; then
		kill "$srv" 2>/dev/null; wait "$srv"
		record "$name" FAIL "server did not start: $(tail -n 2 "/out/$name-server.log")"
		return
	fi
	check "$name" 90 "$1" -d "$dev" -R -s "$2" -n "$3" "$addr"
	wait "$srv" || record "$name-server" FAIL "server exit status $?"
}
perf ib_write_bw 65536 2000
perf ib_write_bw 64 10000
perf ib_write_lat 65536 500
perf ib_write_lat 8 2000

check socat 300 "$REPO/tests/integration/socat.sh" "$build"
check stress 400 "$REPO/tests/integration/stress.sh" "$build"
guest_finish
