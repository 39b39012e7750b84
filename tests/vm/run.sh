#!/bin/bash
# run.sh BUILD_DIR - smcr on real verbs devices, in qemu guests.
#
# Owns the tests/vm run: boots Debian's kernel under qemu (TCG; see
# README.md here) on the host's file system and runs, against BUILD_DIR as
# built on the host:
#   rxe    one guest with Soft-RoCE: the device works (ibv_devices,
#          ib_write_bw and ib_write_lat at 64 KiB and at a small size), then
#          the integration tests socat.sh over shm (socat-shm: with smcrd, as
#          CTest's integration.socat-shm; without SMCR_TEST_TRANSPORT it
#          starts none), stress.sh, negotiation_wire.sh and shm_broker.sh
#          (smcrd's BPF program and libsmcr on the guest's kernel), then
#          redis.sh, iperf3.sh, sockperf.sh, stress.sh, socat.sh, fork.sh,
#          kill.sh, budget.sh, semantics.sh, late_peer.sh and closefrom.sh
#          over the RDMA transport
#          (NAME-rdma: on the veth's address, smcrd with shm = 0;
#          guest-onehost.sh);
#   siw    the same with Soft-iWARP, without negotiation_wire.sh and
#          shm_broker.sh;
#   2host  two guests joined by virtio-net (qemu's UDP socket backend), rxe
#          on eth0: ib_write_bw and ib_write_lat between them, then under the
#          preload with smcrd in both: a TCP exchange, byte-exact and carried
#          by the rdma transport, then redis, iperf3, sockperf and stress with
#          the server in one guest and the client in the other, each checked
#          and counted over rdma on both sides (guest-twohost.sh).
# Each guest's logs stay in BUILD_DIR/vm/NAME/; the perftest figures go to
# BUILD_DIR/vm-perftest.txt (the baselines for the RDMA transport), with
# rdma_peer's figures of the RDMA transport and their ratios to perftest.  Prints
# every guest's results; exits 1 if any check, guest or figure is missing
# or failed.  Each guest is killed after VM_TIMEOUT (1800) s.
set -euo pipefail
build=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
export VM_CACHE=${VM_CACHE:-/var/tmp/smcr-vm}
export VM_TIMEOUT=${VM_TIMEOUT:-1800}
vm=$build/vm
rm -rf "$vm"
mkdir -p "$vm"
start=$SECONDS
failed=0

"$here/initramfs.sh" "$VM_CACHE"
SIW_KO=$("$here/siw.sh" "$VM_CACHE")
export SIW_KO VM_ENV=SIW_KO

# guest NAME ARGS...: runvm.sh with its output in $vm/NAME/; the status
# goes to $vm/NAME.rc.
guest() {
	local name=$1 rc=0
	shift
	mkdir -p "$vm/$name"
	"$here/runvm.sh" "$vm/$name" "$here/guest-setup.sh" "$@" > "$vm/$name.runvm.log" 2>&1 || rc=$?
	echo "$rc" > "$vm/$name.rc"
}

# onehost DRIVER TEST...: one guest with DRIVER's device and these integration tests.
onehost() {
	local t0=$SECONDS driver=$1
	shift
	guest "$driver" "$driver" veth 10.9.0.1/24 "$here/guest-onehost.sh" "$build" "${driver}0" 10.9.0.1 "$@"
	echo "vm: $driver guest done ($((SECONDS - t0)) s)"
}
rdma_tests=(redis-rdma iperf3-rdma sockperf-rdma stress-rdma socat-rdma fork-rdma kill-rdma budget-rdma semantics-rdma
	    late_peer-rdma closefrom-rdma fork_used-rdma leave_confined-rdma leave_both-rdma
	    used_then_forked-rdma sandbox_race-rdma inetd-rdma exec_gap-rdma exec_close-rdma dispatch-rdma sshd-rdma
	    forkserver-rdma forkserver_many-rdma ftp-rdma exit_send-rdma exit_now-rdma handover-rdma)
onehost rxe socat-shm stress negotiation_wire shm_broker "${rdma_tests[@]}"
onehost siw socat-shm stress "${rdma_tests[@]}"

# Two guests, their NICs joined by qemu's UDP socket backend (two host ports
# on 127.0.0.1): unlike the TCP one, it adds no Nagle/delayed-ACK waits
# (ib_write_lat 8 B: about 0.2 ms instead of 22 ms).  One vCPU each, so that
# the two fit the host's cores (with two each, the typical latency varies
# from 0.3 to 6 ms with the host's scheduling).
head -c $((4 * 1024 * 1024)) /dev/urandom > "$vm/exchange.bin"
t0=$SECONDS
port=$((20000 + RANDOM % 20000))
while ss -Hun "( sport = :$port or sport = :$((port + 1)) )" | grep -q .; do port=$((20000 + RANDOM % 20000)); done
nic() { echo "-netdev socket,id=n0,udp=127.0.0.1:$2,localaddr=127.0.0.1:$1 -device virtio-net-pci,netdev=n0,mac=52:54:00:00:00:$3"; }
VM_SMP=1 VM_NET=$(nic "$port" $((port + 1)) 02) \
	guest 2host-server rxe eth0 10.6.0.2/24 "$here/guest-twohost.sh" "$build" server 10.6.0.2 10.6.0.1 "$vm/exchange.bin" &
VM_SMP=1 VM_NET=$(nic $((port + 1)) "$port" 01) \
	guest 2host-client rxe eth0 10.6.0.1/24 "$here/guest-twohost.sh" "$build" client 10.6.0.1 10.6.0.2 "$vm/exchange.bin"
wait
echo "vm: two guests done ($((SECONDS - t0)) s)"

# figure TEST BYTES SETUP LOG...: "SETUP TEST BYTES VALUE UNIT" from the
# first perftest log that has it (BW average, or the typical latency);
# nothing if none has, or only "inf" (perftest could not measure the CPU
# clock).  Client first; the server's figure is the same measurement.
figure() {
	local test=$1 bytes=$2 setup=$3
	shift 3
	{ cat "$@" 2>/dev/null || true; } | awk -v test="$test" -v bytes="$bytes" -v setup="$setup" '
		/#bytes/ { header = 1; next }
		header && $1 == bytes {
			v = test ~ /bw/ ? $4 : $5
			if (v ~ /^[0-9]+(\.[0-9]+)?$/) {
				printf "%-24s %-13s %6d B %10s %s\n", setup, test, bytes, v, test ~ /bw/ ? "MB/s" : "us"
				exit
			}
		}'
}
{
	echo "# perftest on soft verbs devices in qemu TCG guests (tests/vm/run.sh, $(date -u +%F),"
	echo "# kernel $(basename "$(readlink "$VM_CACHE/vmlinuz")"), on a $(nproc)-CPU host; one guest: 2 vCPUs,"
	echo "# two guests: 1 vCPU each, joined by qemu -netdev socket,udp)."
	echo "# ib_write_bw: BW average; ib_write_lat: t_typical.  rdma_cm (-R)."
} > "$build/vm-perftest.txt"
for want in "rxe ib_write_bw 65536" "rxe ib_write_bw 64" "rxe ib_write_lat 65536" "rxe ib_write_lat 8" \
	    "rxe ib_send_lat 44" "siw ib_write_bw 65536" "siw ib_write_bw 64" "siw ib_write_lat 65536" \
	    "siw ib_write_lat 8" "siw ib_send_lat 44" \
	    "2host-client ib_write_bw 65536" "2host-client ib_write_lat 8"; do
	read -r name test bytes <<< "$want"
	log=perf-$test-$bytes
	case $name in
		2host-client) line=$(figure "$test" "$bytes" "rxe two guests (virtio)" \
				   "$vm/2host-client/$log.log" "$vm/2host-server/$log.log") ;;
		*) line=$(figure "$test" "$bytes" "$name one guest" "$vm/$name/$log.log" "$vm/$name/$log-server.log") ;;
	esac
	if [ -n "$line" ]; then
		echo "$line" >> "$build/vm-perftest.txt"
	else
		echo "FAIL no figure for $want" >> "$vm/figures"
	fi
done

# The RDMA transport's figures (rdma_peer's "figure:" lines) against the
# same guest's perftest, as ratios: stream against ib_write_bw 64 KiB;
# ping-pong against ib_write_lat 8 B, whose t_typical is half a round trip,
# and against ib_write_lat + ib_send_lat (44 B): a message of RFC 7609 is a
# WRITE and a SEND.  Then the real programs' figures over the transport
# (sockperf-rdma's and iperf3-rdma's "figure:" lines) against the same
# baselines, and against the same program on plain TCP in the same guest.
# Printed only: figures on a shared TCG host are too noisy to assert.
for name in rxe siw; do
	awk -v setup="$name one guest" '
		FILENAME ~ /perftest/ && $0 ~ "^" setup {
			if ($4 == "ib_write_bw" && $5 == 65536) bw = $7
			if ($4 == "ib_write_lat" && $5 == 8) lat = $7
			if ($4 == "ib_send_lat" && $5 == 44) slat = $7
		}
		FILENAME !~ /perftest/ && /^figure: smcr-rdma ping-pong/ { p50 = $7 }
		FILENAME !~ /perftest/ && /^figure: smcr-rdma stream/ { mbs = $7; rmb = $12 }
		/^figure: (sockperf|iperf3) / { app[$2 " " $3 " " $4] = $5 }
		function of(v, base) { return base + 0 > 0 && v + 0 > 0 ? sprintf("%.2f", v / base) : "?" }
		END {
			if (mbs != "")
				printf "%-24s %-13s %6d B %10s MB/s  %s of ib_write_bw (RMB %s KiB)\n", setup,
				       "smcr stream", 65536, mbs, bw ? sprintf("%.2f", mbs / bw) : "?", rmb
			if (p50 != "")
				printf "%-24s %-13s %6d B %10s us    round trip p50; half of it %s x ib_write_lat, %s x ib_write_lat + ib_send_lat\n",
				       setup, "smcr pingpong", 14, p50, lat ? sprintf("%.1f", p50 / 2 / lat) : "?",
				       lat && slat ? sprintf("%.1f", p50 / 2 / (lat + slat)) : "?"
			v = app["sockperf smcr throughput"]
			if (v != "")
				printf "%-24s %-13s %6d B %10s MB/s  %s of ib_write_bw, %s of plain TCP\n", setup,
				       "sockperf tp", 65000, v, of(v, bw), of(v, app["sockperf plain throughput"])
			v = app["iperf3 smcr forward"]
			if (v != "")
				printf "%-24s %-13s %6d B %10s MB/s  %s of ib_write_bw, %s of plain TCP\n", setup,
				       "iperf3", 131072, v, of(v, bw), of(v, app["iperf3 plain forward"])
			v = app["sockperf smcr ping-pong"]
			if (v != "")
				printf "%-24s %-13s %6d B %10s us    p50 one-way; %s x ib_write_lat, %s x plain TCP\n", setup,
				       "sockperf pp", 14, v, of(v, lat), of(v, app["sockperf plain ping-pong"])
		}' "$build/vm-perftest.txt" "$vm/$name/rdma_peer.log" "$vm/$name/sockperf-rdma.log" \
		   "$vm/$name/iperf3-rdma.log" >> "$build/vm-perftest.txt" 2>/dev/null || true
done

echo "=== tests/vm results ($((SECONDS - start)) s)"
for name in rxe siw 2host-server 2host-client; do
	rc=$(cat "$vm/$name.rc")
	sed "s/^/$name: /" "$vm/$name/results" 2>/dev/null || echo "$name: FAIL no results"
	# why each failed check failed: its FAIL lines and its last lines (CI keeps only this output)
	sed -n 's/^FAIL \([^ ]*\) .*/\1/p' "$vm/$name/results" 2>/dev/null | while read -r check; do
		log=$vm/$name/$check.log
		[ -f "$log" ] || continue
		echo "$name: --- $check: the FAIL lines and the end of $log"
		{ grep '^FAIL' "$log" | head -n 20 || true; tail -n 15 "$log"; } | sed "s/^/$name:   /"
	done || true
	grep -q '^FAIL' "$vm/$name/results" 2>/dev/null && failed=1
	[ -s "$vm/$name/results" ] || failed=1
	if [ "$rc" = 0 ]; then
		echo "$name: PASS guest exit status 0"
	else
		failed=1
		echo "$name: FAIL guest exit status $rc: $(tail -n 2 "$vm/$name.runvm.log" | tr '\n' ' ')"
		echo "$name: --- the end of its console ($vm/$name/console.log)"
		tail -n 30 "$vm/$name/console.log" 2>/dev/null | sed "s/^/$name:   /"
	fi
done
if [ -s "$vm/figures" ]; then cat "$vm/figures"; failed=1; fi
echo "--- $build/vm-perftest.txt"
cat "$build/vm-perftest.txt"
passed=$(cat "$vm"/*/results 2>/dev/null | grep -c '^PASS' || true)
nfailed=$(cat "$vm"/*/results "$vm/figures" 2>/dev/null | grep -c '^FAIL' || true)
[ "$failed" = 0 ] || [ "$nfailed" -gt 0 ] || nfailed=1         # a guest that reported nothing
[ "$failed" = 0 ] && echo "tests/vm: all passed" || echo "tests/vm: FAILED"
echo "vm: $passed passed, $nfailed failed"
exit "$failed"
