#!/bin/bash
# variants: shm
# iperf3.sh BUILD_DIR - iperf3 transfers 100 MiB (-n), client to server
# (write), client to server with -Z (sendfile) and server to client (-R), once
# plainly and once with client and server under libsmcr.so.  Both ends must
# report the requested bytes sent and received (JSON) in both modes (the
# sender may add a few blocks, the receiver stop counting early, but not
# before it has read all that could not still be in flight: see below).
# Under the preload, libsmcr must have been in both programs and seen the
# control and data connections, and its byte counters must match what iperf3
# moved: the receiver's "bytes in" at least the received payload and at most a
# little more (the control connection), and the same for the sender's "bytes
# out"; what one end's libsmcr counted out, the other's counted in.  On
# $SMCR_TEST_ADDR (lib.sh); with SMCR_TEST_TRANSPORT set, smcrd runs and both
# connections must go over that transport.  IPERF3_MIB (100): the size.
# Prints "figure:" lines (MiB/s received) for tests/vm/run.sh.
. "$(dirname "$0")/lib.sh"
need iperf3
daemon=0
with_smcrd 15201-15202 256 && daemon=1

BYTES=$((${IPERF3_MIB:-100} * 1024 * 1024))
SLACK=65536     # control connection traffic around the payload

# json FILE: "SENT RECEIVED MIBS" from an iperf3 JSON report (sum_sent.bytes,
# sum_received.bytes, and the receiver's MiB/s), or "error: ..." if the
# test failed.
json() {
	"$PY" -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("error: no JSON report:", e); sys.exit()
if "error" in d:
    print("error:", d["error"]); sys.exit()
e = d["end"]
r = e["sum_received"]
print(e["sum_sent"]["bytes"], r["bytes"], "%.1f" % (r["bits_per_second"] / 8 / 2**20))' "$1"
}

# in_flight MODE: the most that can be sent and not yet read when the
# receiver stops counting (see below).  Over TCP, the kernel's largest send
# and receive buffers (the limits of autotuning, tcp_wmem and tcp_rmem);
# over the transport, the receiver's RMB, which the sender writes into
# directly (over rdma, and the sender's staging buffer of the same size);
# none if no RMB was given (on_transport says so).
in_flight() {
	local rmb
	if [ "$1" = plain ] || [ "$daemon" = 0 ]; then
		echo $(($(cut -f3 /proc/sys/net/ipv4/tcp_wmem) + $(cut -f3 /proc/sys/net/ipv4/tcp_rmem)))
		return
	fi
	rmb=$(rmb_size) || rmb=0
	[ "$TEST_TRANSPORT" = rdma ] && rmb=$((2 * rmb))
	echo "$rmb"
}

# within WHAT COUNTER PAYLOAD: PAYLOAD <= COUNTER <= PAYLOAD + SLACK
within() {
	if [ "${2:-0}" -ge "$3" ] 2>/dev/null && [ "$2" -le $(($3 + SLACK)) ]; then
		pass "$1: $2 (payload $3)"
	else
		fail "$1: ${2:-none}, expected payload $3 plus at most $SLACK"
	fi
}

port=15201
for mode in plain smcr; do
	for run in forward sendfile reverse; do
		opts=()
		case $run in
			sendfile) opts=(-Z) ;;
			reverse) opts=(-R) ;;
		esac
		name=$mode-$run
		start_bg "server-$name" "$mode" iperf3 -s -1 -B "$TEST_ADDR" -p "$port" -J
		srv=$LAST_PID
		wait_listen "$port" "$srv" || continue
		run_mode "$mode" timeout 20 iperf3 -c "$TEST_ADDR" -p "$port" -n "$BYTES" -J "${opts[@]}" \
			> "$WORK/client-$name.out" 2> "$WORK/client-$name.err"
		expect_eq "$name: client exit status" "$?" 0
		stop_bg "$srv" - 10
		expect_eq "$name: server exit status" "$?" 0

		# The sender sent what was asked, or a little more.  The receiver may stop
		# counting when the end of the test reaches it on the control
		# connection before the last data (iperf3 behaviour, also
		# without the preload: up to 8 MiB short over TCP, an RMB's worth
		# over shm), so it must have received at most what was sent
		# (the blocks past -n too: 128 KiB more with -Z in an rxe
		# guest) and at least what was sent less what can be in
		# flight.  The client's report has the server's numbers.
		read -r c_sent c_recv mibs <<< "$(json "$WORK/client-$name.out")"
		read -r s_sent s_recv _ <<< "$(json "$WORK/server-$name.out")"
		echo "figure: iperf3 $mode $run ${mibs:-?} MB/s received"
		if [ "$run" = reverse ]; then
			sent=$s_sent; recv=$c_recv; ours=$c_sent; theirs=$s_sent
		else
			sent=$c_sent; recv=$s_recv; ours=$c_recv; theirs=$s_recv
		fi
		if [ "$sent" -ge "$BYTES" ] 2>/dev/null && [ "$sent" -le $((BYTES + 524288)) ]; then
			# A sender may add a block or a few: with -Z, one
			# sendfile of 128 KiB past -n; with -R, the server sends
			# until the client's end of the test reaches it (iperf3
			# behaviour, without the preload too, seen in a TCG guest)
			pass "$name: bytes sent: $sent (asked $BYTES)"
		else
			fail "$name: bytes sent: $sent, asked $BYTES (at most 512 KiB more)"
		fi
		short=$(in_flight "$mode")
		if [ "$recv" -ge $((sent - short)) ] 2>/dev/null && [ "$recv" -le "$sent" ]; then
			pass "$name: bytes received: $recv (sent $sent, at most $short in flight)"
		else
			fail "$name: bytes received: $recv, expected $sent less at most $short in flight (client report: $(json "$WORK/client-$name.out"), server report: $(json "$WORK/server-$name.out"))"
		fi
		expect_eq "$name: the client reports the server's count" "$ours" "$theirs"

		# A control connection and one data connection.
		libsmcr_saw "$name" "$mode" iperf3 "$srv" 2 || continue
		# What the sender's libsmcr counted out, the receiver's counted
		# in, or less (see above), and at least what iperf3 received.
		if [ "$run" = reverse ]; then
			snd_out=$s_out; snd_in=$s_in; rcv_in=$c_in; rcv_out=$c_out
		else
			snd_out=$c_out; snd_in=$c_in; rcv_in=$s_in; rcv_out=$s_out
		fi
		within "$name: sender's libsmcr bytes out" "${snd_out:-}" "$sent"
		expect_at_least "$name: receiver's libsmcr bytes in vs bytes received" "${rcv_in:-0}" "$recv"
		expect_at_least "$name: sender's libsmcr bytes out vs receiver's in" "${snd_out:-0}" "${rcv_in:-1}"
		# The control connection is read to the end on both sides.
		expect_eq "$name: receiver's libsmcr out = sender's in" "${rcv_out:-none}" "${snd_in:-}"
		[ "$daemon" = 0 ] || on_transport "$name" 2 "$recv"
	done
	port=$((port + 1))
done
finish
