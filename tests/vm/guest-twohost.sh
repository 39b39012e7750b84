#!/bin/bash
# guest-twohost.sh BUILD_DIR server|client ADDR PEER FILE - one of two guests
# joined by a virtio-net link, run by run.sh through guest-setup.sh (which
# put ADDR and rxe0 on eth0).
#
# Owns the two-host checks, in phases; before each, the server opens a
# plain "ready" port (17601-17607, socat) once its side listens, and the
# client waits for it:
#   1, 2. ib_write_bw (64 KiB) and ib_write_lat (8 B) between the guests, over
#      rdma_cm (-R): the figures go to /out/perf-*.log for run.sh;
#   3. each guest runs its own smcrd (SMC enabled for ADDR, ports 17600 and
#      17610-17619; shared memory left on, as by default: it cannot cross
#      hosts), and the two exchange FILE over TCP under the preload with
#      echo.py: byte-exact both ways, and smcrctl stats must count one
#      connection, SMC negotiated in the handshake and carried by the rdma
#      transport with FILE's size each way, no byte through TCP, nothing on
#      shared memory and no fallback (stats-echo-rdma);
#   4-7. real programs under the preload, server here and client there
#      (twohost-apps.sh says what each checks): redis-server and
#      redis-benchmark, iperf3, sockperf ping-pong and throughput, and the
#      stress program (every byte of many connections checked); after each,
#      smcrctl stats on each side must show that the rdma transport carried
#      at least the program's connections (client ends in the client, server
#      ends in the server) and bytes, nothing went on shared memory and
#      nothing fell back to TCP (NAME-rdma-stats).
. "$(dirname "$0")/guest-lib.sh"
build=${1:?usage: $0 BUILD_DIR server|client ADDR PEER FILE} role=${2:?} addr=${3:?} peer=${4:?} file=${5:?}
port=17600
size=$(stat -c %s "$file")

# phase READY_PORT NAME PATTERN CMD...: the server's side runs CMD until it
# exits, with the ready port open once PATTERN is in its output; the
# client's waits for the ready port, then runs CMD.  Each side gets
# PHASE_SECS (150) seconds.
phase() {
	local ready=$1 name=$2 pattern=$3 pid rc sock end secs=${PHASE_SECS:-150}
	shift 3
	if [ "$role" = server ]; then
		timeout -k 5 "$secs" stdbuf -oL "$@" > "/out/$name.log" 2>&1 &
		pid=$!
		wait_for "/out/$name.log" "$pattern" 60 &&
			{ timeout "$secs" socat "TCP-LISTEN:$ready,bind=$addr,reuseaddr,fork" /dev/null & sock=$!; }
		wait "$pid"
		rc=$?
		[ -z "${sock:-}" ] || { kill "$sock"; wait "$sock"; } 2>/dev/null
		tail -n 3 "/out/$name.log"
		[ "$rc" = 0 ] && record "$name" OK || record "$name" FAIL "exit status $rc"
	else
		end=$((SECONDS + secs))
		until (exec 3<>"/dev/tcp/$peer/$ready") 2>/dev/null; do
			[ "$SECONDS" -lt "$end" ] || { record "$name" FAIL "the server never got ready"; return 1; }
			sleep 0.5
		done
		if [ "$name" = "${name#perf-}" ]; then
			check "$name" "$secs" "$@"
		else
			# perftest's server says it waits a moment before its
			# rdma_cm listener is up: a client that comes too early
			# is rejected (and may crash), and the server waits on
			check "$name" "$secs" bash -c 'for try in 1 2 3; do "$@" && exit 0; rc=$?
				echo "perftest client failed with $rc (try $try)"; sleep 2; done; exit $rc' perftest "$@"
		fi
	fi
}
to=()
[ "$role" = server ] || to=("$peer")

phase 17602 perf-ib_write_bw-65536 "Waiting for client" ib_write_bw -d rxe0 -R -F -s 65536 -n 1000 "${to[@]}"
phase 17603 perf-ib_write_lat-8 "Waiting for client" ib_write_lat -d rxe0 -R -F -s 8 -n 300 "${to[@]}"

export SMCR_RUNDIR=/run/smcr
printf 'enabled = 1\nip_addr_list = %s\nport_range_list = %s,17610-17619\n' "$addr" "$port" > /run/smcr.conf
"$build/bin/smcrd" -f -c /run/smcr.conf 2> /out/smcrd.log &
if wait_for /out/smcrd.log "loaded /run/smcr.conf" 30; then
	record smcrd OK
else
	record smcrd FAIL "did not start: $(tail -n 3 /out/smcrd.log)"
	guest_finish
fi
ok=0
phase 17601 echo listening env LD_PRELOAD="$build/lib/libsmcr.so" SMCR_LOG=debug \
	python3 "$REPO/tests/vm/echo.py" "$role" "${to[@]:-$addr}" "$port" "$file" && ok=1
grep -q "bytes from .*, equal to" /out/echo.log || ok=0
[ "$ok" = 1 ] && record echo-byte-exact OK || record echo-byte-exact FAIL "$(grep -v libsmcr /out/echo.log | tail -n 2)"

# counts: what smcrctl stats counted so far (the JSON in /out/stats.json):
# "tcp CLIENTS SERVERS smc CLIENTS SERVERS shm CLIENTS SERVERS rdma CLIENTS
# SERVERS BYTES_IN BYTES_OUT tcp-bytes IN OUT fallbacks N REASON=COUNT...".
counts() {
	"$build/bin/smcrctl" stats --json > /out/stats.json 2>&1
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
c, d, r = j["connections"], j["data"], j["transports"]["rdma"]
print("tcp", c["tcp_clients"], c["tcp_servers"], "smc", c["smc_clients"], c["smc_servers"],
      "shm", c["shm_clients"], c["shm_servers"],
      "rdma", r["clients"], r["servers"], r["bytes_in"], r["bytes_out"],
      "tcp-bytes", d["tcp_bytes_in"], d["tcp_bytes_out"], "fallbacks", c["fallbacks"],
      " ".join("%s=%d" % (x["name"], x["count"]) for x in c["fallback_reasons"]))' /out/stats.json 2>&1
}

# The echo's connection: negotiated in the handshake (the option went both
# ways over the wire), then carried by the rdma transport, FILE's size each
# way; not a byte through TCP, no fallback.
if [ "$role" = client ]; then
	want="tcp 1 0 smc 1 0 shm 0 0 rdma 1 0 $size $size tcp-bytes 0 0 fallbacks 0"
else
	want="tcp 0 1 smc 0 1 shm 0 0 rdma 0 1 $size $size tcp-bytes 0 0 fallbacks 0"
fi
got=$(counts)
"$build/bin/smcrctl" stats > /out/stats.txt 2>&1
if [ "$(echo $got)" = "$want" ]; then
	record stats-echo-rdma OK
else
	record stats-echo-rdma FAIL "smcrctl stats: '$got', expected '$want'"
fi

# app READY NAME PORT MIN_CONNS MIN_BYTES: phase READY of twohost-apps.sh
# NAME on PORT (the server's address on both sides), then NAME-rdma-stats:
# since the last app, at least MIN_CONNS connection ends of this side's role
# (client or server) went over rdma and none of the other, at least
# MIN_BYTES in and out together, nothing on shm, no fallback.
rdma_counts() {         # "OUR_ENDS OTHER_ENDS BYTES SHM_CONNS FALLBACKS"
	local c
	read -r -a c <<< "$(counts)"
	if [ "$role" = client ]; then
		echo "${c[10]} ${c[11]} $((c[12] + c[13])) $((c[7] + c[8])) ${c[18]}"
	else
		echo "${c[11]} ${c[10]} $((c[12] + c[13])) $((c[7] + c[8])) ${c[18]}"
	fi
}
read -r last_ours last_other last_bytes last_shm last_fb <<< "$(rdma_counts)"
export REDIS_N=1000 IPERF3_MIB=16 SOCKPERF_SECS=3 STRESS_CONNS=32 STRESS_MAX_BYTES=262144
app() {
	local ready=$1 name=$2 app_port=$3 min_conns=$4 min_bytes=$5 server=$addr
	local ours other bytes shm fb got
	[ "$role" = server ] || server=$peer
	PHASE_SECS=240 phase "$ready" "$name" "twohost-apps: listening" \
		"$REPO/tests/vm/twohost-apps.sh" "$build" "$role" "$name" "$server" "$app_port"
	read -r ours other bytes shm fb <<< "$(rdma_counts)"
	got="$((ours - last_ours)) $role ends and $((other - last_other)) others on rdma, $((bytes - last_bytes)) bytes; $((shm - last_shm)) on shm, $((fb - last_fb)) fallbacks"
	if [ $((ours - last_ours)) -ge "$min_conns" ] && [ "$other" = "$last_other" ] &&
	   [ $((bytes - last_bytes)) -ge "$min_bytes" ] && [ "$shm $fb" = "$last_shm $last_fb" ]; then
		record "$name-rdma-stats" OK
		echo "  ($name: $got)" | tee -a /out/results
	else
		record "$name-rdma-stats" FAIL "$got; expected >= $min_conns, 0, >= $min_bytes; 0, 0"
	fi
	last_ours=$ours last_other=$other last_bytes=$bytes last_shm=$shm last_fb=$fb
}
# READY NAME PORT MIN_CONNS MIN_BYTES: redis-benchmark's 10 connections for
# each of its 4 tests and redis-cli's 3, 20 bytes a request at least;
# iperf3's control and data connections and half its bytes (its receiver
# may stop reading a little early); sockperf's two runs, 100 messages of
# 65000 B at least; the stress connections.
app 17604 redis 17610 43 $((REDIS_N * 4 * 20))
app 17605 iperf3 17611 2 $((IPERF3_MIB << 19))
app 17606 sockperf 17612 2 $((100 * 65000))
app 17607 stress 17614 "$STRESS_CONNS" 1
guest_finish
