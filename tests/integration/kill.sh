#!/bin/bash
# kill.sh BUILD_DIR - a peer killed mid-transfer, on $SMCR_TEST_TRANSPORT
# (lib.sh; shm by default, rdma in the VM guests): socat streams /dev/zero to
# a socat writing /dev/null, and once bytes reach the server one end gets
# SIGKILL, the server first, then the client.  Each is done plainly over TCP
# first, then with both under the preload and smcrd running.  The other end
# must end within KILL_SECS (10: a bound that catches a hang, not a measure)
# as it did over TCP: the same exit status, or the same signal (a crash of
# libsmcr in the survivor is not an end).  Under the preload the connections
# must have gone over the transport, their buffers (the RMB of each end,
# read from smcrctl conns; over rdma, staging buffers of that size too) must
# be charged against max_memory while they run, and once both are gone every
# buffer must be back with max_memory and, over rdma, no link of theirs be
# up (its QP released).
. "$(dirname "$0")/lib.sh"
need socat
start_smcrd 19301 256
secs=${KILL_SECS:-10}

# moving PID: within $secs s, process PID (the server) has written 1 MiB to
# /dev/null, so bytes are going through the connection.
moving() {
	local wchar
	for _ in $(seq $((secs * 10))); do
		wchar=$(sed -n 's/^wchar: //p' "/proc/$1/io" 2> /dev/null)
		[ "${wchar:-0}" -ge 1048576 ] && return 0
		sleep 0.1
	done
	fail "$mode: no bytes reached the server within $secs s"
	return 1
}

# charged: both ends' buffers are counted against max_memory: each end's
# RMB and, over rdma, the staging buffer (of the RMB's size) it writes from.
charged() {
	local rmb
	rmb=$(conn_field "$cli" rmb_size)
	[[ $rmb =~ ^[0-9]+$ ]] || { fail "$mode: smcrctl conns: no RMB for the client ('$rmb')"; return; }
	[ "$TEST_TRANSPORT" = rdma ] && rmb=$((2 * rmb))
	expect_at_least "$mode: max_memory in use by the two ends mid-transfer" "$(stats_counter in_use)" $((2 * rmb))
}

# ended PID: sets $how to how process PID, started by start_bg in this
# shell (so not in a subshell), ended within $secs s: "exit N" or "signal
# NAME".  stop_bg fails the test if it had to kill it, or if it crashed.
ended() {
	local rc=0
	stop_bg "$1" - "$secs" || rc=$?
	how="exit $rc"
	[ "$rc" -le 128 ] || how="signal $(kill -l $((rc - 128)))"
}

# transfer MODE VICTIM: the socat pair (MODE plain or smcr) with VICTIM
# (server or client) SIGKILLed mid-transfer; sets $how, how the other end
# ended.
transfer() {
	mode=$1-$2
	start_bg "server-$mode" "$1" socat -u "TCP-LISTEN:19301,reuseaddr,bind=$TEST_ADDR" OPEN:/dev/null
	srv=$LAST_PID
	wait_listen 19301 "$srv"
	start_bg "client-$mode" "$1" socat -u OPEN:/dev/zero "TCP:$TEST_ADDR:19301"
	cli=$LAST_PID
	how=
	if moving "$srv"; then
		[ "$1" = plain ] || charged
		if [ "$2" = server ]; then kill -9 "$srv"; survivor=$cli; else kill -9 "$cli"; survivor=$srv; fi
		ended "$survivor" 2> /dev/null          # no "Killed" from bash for the victim
	fi
	kill -9 "$srv" "$cli" 2> /dev/null
	wait "$srv" "$cli" 2> /dev/null
}

for victim in server client; do
	transfer plain "$victim"
	over_tcp=$how
	echo "over TCP, SIGKILL of the $victim: the other end's $over_tcp"
	transfer smcr "$victim"
	expect_eq "SIGKILL of the $victim mid-transfer: the other end ended as over TCP" "$how" "$over_tcp"
	on_transport "SIGKILL of the $victim" 1 1
done

# Everything is back once both are gone (smcrd sees a killed process's control socket close).
memory_back "all SMC buffers returned to max_memory"
[ "$TEST_TRANSPORT" != rdma ] || expect_eq "RDMA links up" "$(stats_counter links_up)" 0
finish
