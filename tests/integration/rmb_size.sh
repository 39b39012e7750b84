#!/bin/bash
# rmb_size.sh BUILD_DIR - a connection's receive buffer (RMB) is as large as
# smcr.conf's rmb_size says, a change taking effect for the next
# connections of running processes too, and as large as the application
# asked with SO_RCVBUF before connecting or listening (socat's rcvbuf=, on
# the client and on the listener), as the statistics' RMB histogram shows,
# with every byte through; and as `smcrctl conns` shows for a connection
# held open (hold_conn.py), its rmb_size at each end and the peer_rmb_size
# the other end learnt.
. "$(dirname "$0")/lib.sh" "$1"
need socat
PORT=24260
start_smcrd "$PORT-$((PORT + 1))" 64
head -c $((4 << 20)) /dev/urandom > "$WORK/data"

# rmbs CLASS: how many of our RMBs of that class (16KiB ... 1MiB) were made on shm.
rmbs() { transport_counter "rmbs.$1"; }

# rmb_counts NAME WANT: the histogram's counts for 16KiB 32KiB ... 1MiB since
# the last call are WANT (seven numbers).
last=(0 0 0 0 0 0 0)
rmb_counts() {
	local now=() got=() i c
	i=0
	for c in 16KiB 32KiB 64KiB 128KiB 256KiB 512KiB 1MiB; do
		now[i]=$(rmbs "$c")
		got[i]=$((now[i] - last[i]))
		i=$((i + 1))
	done
	expect_eq "$1: our RMBs by size, 16 KiB to 1 MiB" "${got[*]}" "$2"
	last=("${now[@]}")
}

# held_sizes NAME RCVBUF SERVER CLIENT: a connection held open by
# hold_conn.py (SMCR_TEST_RCVBUF=RCVBUF: the listener's and the client's
# SO_RCVBUF) goes over shared memory, its RMB SERVER bytes at the server's
# end and CLIENT at the client's, and each end's peer_rmb_size the other's,
# as `smcrctl conns --json` shows them.
held_sizes() {
	local name=$1 server_rmb=$3 client_rmb=$4 held server client
	SMCR_TEST_RCVBUF=${2:-0 0} start_bg "held-$name" smcr "$PY" "$SRC/tests/integration/hold_conn.py" \
		"$TEST_ADDR" "$PORT"
	held=$LAST_PID
	wait_for "$WORK/held-$name.out" '^held' ||
		{ fail "$name: no connection held: $(cat "$WORK/held-$name.err")"; finish; }
	read -r _ server client < "$WORK/held-$name.out"
	expect_eq "$name: server's end: mode, rmb_size, peer_rmb_size (smcrctl conns)" \
		"$(conn_sizes "$server")" "shm $server_rmb $client_rmb"
	expect_eq "$name: client's end: mode, rmb_size, peer_rmb_size (smcrctl conns)" \
		"$(conn_sizes "$client")" "shm $client_rmb $server_rmb"
	stop_bg "$held"
}

# conn_sizes PID: "MODE RMB_SIZE PEER_RMB_SIZE" of process PID's connection.
conn_sizes() {
	echo "$(conn_field "$1" mode) $(conn_field "$1" rmb_size) $(conn_field "$1" peer_rmb_size)"
}

"$BIN/smcrctl" -c "$CONF" set rmb_size=16 > /dev/null
socat_transfer rmb_size_16 "$PORT"
rmb_counts "rmb_size 16" "2 0 0 0 0 0 0"
on_transport "rmb_size 16" 1 $((4 << 20))
held_sizes "rmb_size 16" "" $((16 << 10)) $((16 << 10))
rmb_counts "rmb_size 16, held" "2 0 0 0 0 0 0"

# a running server: its next connection takes the new size
start_bg long smcr socat "TCP-LISTEN:$((PORT + 1)),bind=$TEST_ADDR,reuseaddr,fork" EXEC:cat
long=$LAST_PID
wait_listen $((PORT + 1)) "$long" || finish
echo one | run_mode smcr socat - "TCP:$TEST_ADDR:$((PORT + 1))" > /dev/null 2>> "$WORK/long-client.err"
"$BIN/smcrctl" -c "$CONF" set rmb_size=128 > /dev/null
echo two | run_mode smcr socat - "TCP:$TEST_ADDR:$((PORT + 1))" > /dev/null 2>> "$WORK/long-client.err"
echo three | run_mode smcr socat - "TCP:$TEST_ADDR:$((PORT + 1))" > /dev/null 2>> "$WORK/long-client.err"
stop_bg "$long"
# the first pair at 16 KiB; the server's process learns the change at its
# second connection's offer, whose reply says it: from the third on, 128 KiB
rmb_counts "a reload while the server runs" "3 0 0 3 0 0 0"

# SO_RCVBUF before listen (the accepted socket takes the listener's) and before connect
socat_transfer SO_RCVBUF "$PORT" ",rcvbuf=32768" ",rcvbuf=1000000"
rmb_counts "SO_RCVBUF 32 KiB (server), 1000000 bytes (client)" "0 1 0 0 0 0 1"
on_transport "SO_RCVBUF" 1 $((4 << 20))
held_sizes "SO_RCVBUF, rmb_size 128" "32768 1000000" $((32 << 10)) $((1 << 20))
rmb_counts "SO_RCVBUF, held" "0 1 0 0 0 0 1"
# the client alone asks (24000 bytes: the next size up), the server has rmb_size's
held_sizes "SO_RCVBUF on the client alone" "0 24000" $((128 << 10)) $((32 << 10))
rmb_counts "SO_RCVBUF on the client alone, held" "0 1 0 1 0 0 0"
stop_bg "$SMCRD_PID"
finish
