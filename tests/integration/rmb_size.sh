#!/bin/bash
# rmb_size.sh BUILD_DIR - a connection's receive buffer (RMB) is as large as
# smcr.conf's rmb_size says, a change taking effect for the next
# connections of running processes too, and as large as the application
# asked with SO_RCVBUF before connecting or listening (socat's rcvbuf=, on
# the client and on the listener), as the statistics' RMB histogram shows,
# with every byte through.
. "$(dirname "$0")/lib.sh" "$1"
need socat
PORT=24260
start_smcrd "$PORT-$((PORT + 1))" 64
head -c $((4 << 20)) /dev/urandom > "$WORK/data"

# rmbs CLASS: how many of our RMBs of that class (16KiB ... 1MiB) were made on shm.
rmbs() { transport_counter "rmbs.$1"; }

# transfer NAME SERVER_OPTS CLIENT_OPTS: a preloaded socat pair moves the data.
transfer() {
	rm -f "$WORK/got"
	start_bg "server-$1" smcr socat -u "TCP-LISTEN:$PORT,bind=$TEST_ADDR,reuseaddr$2" \
		"CREATE:$WORK/got"
	local server=$LAST_PID
	wait_listen "$PORT" "$server" || finish
	run_mode smcr socat -u "FILE:$WORK/data" "TCP:$TEST_ADDR:$PORT$3" 2> "$WORK/client-$1.err"
	expect_eq "$1: client exit status" "$?" 0
	until_true eval '! kill -0 "$server" 2> /dev/null' || fail "$1: the server did not end"
	stop_bg "$server"
	expect_eq "$1: the bytes" "$(sha256sum < "$WORK/got")" "$(sha256sum < "$WORK/data")"
}

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

"$BIN/smcrctl" -c "$CONF" set rmb_size=16 > /dev/null
transfer "rmb_size 16" "" ""
rmb_counts "rmb_size 16" "2 0 0 0 0 0 0"
on_transport "rmb_size 16" 1 $((4 << 20))

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
transfer "SO_RCVBUF" ",rcvbuf=32768" ",rcvbuf=1000000"
rmb_counts "SO_RCVBUF 32 KiB (server), 1000000 bytes (client)" "0 1 0 0 0 0 1"
on_transport "SO_RCVBUF" 1 $((4 << 20))
stop_bg "$SMCRD_PID"
finish
