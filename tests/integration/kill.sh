#!/bin/bash
# kill.sh BUILD_DIR - a peer killed mid-transfer, on $SMCR_TEST_TRANSPORT
# (lib.sh; shm by default, rdma in the VM guests): socat streams /dev/zero to
# a socat writing /dev/null, both under the preload with smcrd running, and
# one end gets SIGKILL, the server first, then the client.  The other end
# must end (an error or end of file, as over TCP) within KILL_SECS (10: a
# bound that catches a hang, not a measure), the connections must have gone
# over the transport, their buffers (over rdma, staging buffers too) must
# be charged against max_memory while they run, and once both are gone
# every buffer must be back with max_memory and, over rdma, no link of
# theirs be up (its QP released).
. "$(dirname "$0")/lib.sh"
need socat
start_smcrd 19301 256
secs=${KILL_SECS:-10}
# Both ends' buffers are charged against max_memory: the RMB, and over
# rdma the staging buffer each end writes from too.
per_end=262144
[ "$TEST_TRANSPORT" = rdma ] && per_end=$((2 * 262144))

for victim in server client; do
	start_bg "server-$victim" smcr socat -u "TCP-LISTEN:19301,reuseaddr,bind=$TEST_ADDR" OPEN:/dev/null
	srv=$LAST_PID
	wait_listen 19301 "$srv"
	start_bg "client-$victim" smcr socat -u OPEN:/dev/zero "TCP:$TEST_ADDR:19301"
	cli=$LAST_PID
	sleep 2         # mid-transfer
	expect_at_least "max_memory in use by the two ends mid-transfer" "$(stats_counter in_use)" $((2 * per_end))
	if [ "$victim" = server ]; then kill -9 "$srv"; survivor=$cli; else kill -9 "$cli"; survivor=$srv; fi
	ended=no
	for _ in $(seq $((secs * 10))); do
		kill -0 "$survivor" 2> /dev/null || { ended=yes; break; }
		sleep 0.1
	done
	expect_eq "SIGKILL of the $victim mid-transfer: the other end ended within $secs s" "$ended" yes
	kill -9 "$srv" "$cli" 2> /dev/null
	wait "$srv" "$cli" 2> /dev/null
	on_transport "SIGKILL of the $victim" 1 1
done

# Everything is back once both are gone (smcrd sees a killed process's control socket close).
memory_back "all SMC buffers returned to max_memory"
[ "$TEST_TRANSPORT" != rdma ] || expect_eq "RDMA links up" "$(stats_counter links_up)" 0
finish
