#!/bin/bash
# guest-twohost.sh BUILD_DIR server|client ADDR PEER FILE - one of two guests
# joined by a virtio-net link, run by run.sh through guest-setup.sh (which
# put ADDR and rxe0 on eth0).
#
# Owns the two-host checks, in three phases; before each, the server opens
# a plain "ready" port (17601-17603, socat) once its side listens, and the
# client waits for it:
#   1, 2. ib_write_bw (64 KiB) and ib_write_lat (8 B) between the guests, over
#      rdma_cm (-R): the figures go to /out/perf-*.log for run.sh;
#   3. each guest runs its own smcrd (SMC enabled for ADDR, port 17600), and
#      the two exchange FILE over TCP under the preload with echo.py.  The
#      option crosses the wire in the handshake, but shared memory cannot
#      cross hosts and there is no RDMA transport yet, so the CLC exchange
#      must leave the connection on TCP: byte-exact both ways, and smcrctl
#      stats must count one connection, SMC negotiated in the handshake, none
#      on shared memory and one fallback, with reason NOSMCDEV on the server
#      (it declines: the peer's GID is another host's) and PEERDECL on the
#      client (with the server's diagnosis 0x03030000 in its log).
. "$(dirname "$0")/guest-lib.sh"
build=${1:?usage: $0 BUILD_DIR server|client ADDR PEER FILE} role=${2:?} addr=${3:?} peer=${4:?} file=${5:?}
port=17600
size=$(stat -c %s "$file")

# phase READY_PORT NAME PATTERN CMD...: the server's side runs CMD until it
# exits, with the ready port open once PATTERN is in its output; the
# client's waits for the ready port, then runs CMD.
phase() {
	local ready=$1 name=$2 pattern=$3 pid rc sock end
	shift 3
	if [ "$role" = server ]; then
		timeout -k 5 150 stdbuf -oL "$@" > "/out/$name.log" 2>&1 &
		pid=$!
		wait_for "/out/$name.log" "$pattern" 60 &&
			{ timeout 150 socat "TCP-LISTEN:$ready,bind=$addr,reuseaddr,fork" /dev/null & sock=$!; }
		wait "$pid"
		rc=$?
		[ -z "${sock:-}" ] || { kill "$sock"; wait "$sock"; } 2>/dev/null
		tail -n 3 "/out/$name.log"
		[ "$rc" = 0 ] && record "$name" OK || record "$name" FAIL "exit status $rc"
	else
		end=$((SECONDS + 150))
		until (exec 3<>"/dev/tcp/$peer/$ready") 2>/dev/null; do
			[ "$SECONDS" -lt "$end" ] || { record "$name" FAIL "the server never got ready"; return 1; }
			sleep 0.5
		done
		check "$name" 150 "$@"
	fi
}
to=()
[ "$role" = server ] || to=("$peer")

phase 17602 perf-ib_write_bw-65536 "Waiting for client" ib_write_bw -d rxe0 -R -F -s 65536 -n 1000 "${to[@]}"
phase 17603 perf-ib_write_lat-8 "Waiting for client" ib_write_lat -d rxe0 -R -F -s 8 -n 300 "${to[@]}"

export SMCR_RUNDIR=/run/smcr
printf 'enabled = 1\nip_addr_list = %s\nport_range_list = %s\n' "$addr" "$port" > /run/smcr.conf
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

# What smcrctl stats counted: TCP connections seen, SMC negotiated in the
# handshake and on shared memory (each "client server"), bytes in and out
# through TCP (FILE's size each way), then the fallbacks and their reasons.  The handshake must have negotiated SMC (the option went
# both ways over the wire), and the CLC exchange then left it on TCP.
if [ "$role" = client ]; then
	want="tcp 1 0 smc 1 0 shm 0 0 bytes $size $size fallbacks 1 PEERDECL=1"
	if grep -q 'peer declined SMC: 0x03030000' /out/echo.log; then
		record declined-nosmcdev OK
	else
		record declined-nosmcdev FAIL "no 'peer declined SMC: 0x03030000' in echo.log"
	fi
else
	want="tcp 0 1 smc 0 1 shm 0 0 bytes $size $size fallbacks 1 NOSMCDEV=1"
fi
"$build/bin/smcrctl" stats --json > /out/stats.json 2>&1
"$build/bin/smcrctl" stats > /out/stats.txt 2>&1
got=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
c, d = j["connections"], j["data"]
print("tcp", c["tcp_clients"], c["tcp_servers"], "smc", c["smc_clients"], c["smc_servers"],
      "shm", c["shm_clients"], c["shm_servers"], "bytes", d["tcp_bytes_in"], d["tcp_bytes_out"],
      "fallbacks", c["fallbacks"],
      " ".join("%s=%d" % (r["name"], r["count"]) for r in c["fallback_reasons"]))' /out/stats.json)
if [ "$got" = "$want" ]; then
	record "stats-fallback-${want##*fallbacks 1 }" OK
else
	record "stats-fallback-${want##*fallbacks 1 }" FAIL "smcrctl stats: '$got', expected '$want'"
fi
guest_finish
