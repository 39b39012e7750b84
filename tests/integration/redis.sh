#!/bin/bash
# variants: shm
# redis.sh BUILD_DIR - redis-server (epoll event loop) driven by redis-benchmark
# (20 parallel connections, INCR/SET/GET/LPUSH), once plainly and once with
# both under libsmcr.so.  The data must be identical: the INCR counter and the
# list hold exactly 10000, the key count is the same, and redis counted the
# same number of connections.  Under the preload, libsmcr must have been in
# both programs and seen every connection (its connect/accept lines and exit
# summaries agree with redis's own count), and its byte counters must agree
# with redis's own network byte counters (INFO stats) in both directions.
# On $SMCR_TEST_ADDR (lib.sh); with SMCR_TEST_TRANSPORT set, smcrd runs and
# the benchmark's connections must go over that transport (redis-cli, plain,
# falls back to TCP).  REDIS_N (10000): requests per test.
. "$(dirname "$0")/lib.sh"
need redis-server redis-benchmark redis-cli
daemon=0
with_smcrd 16379-16380 256 && daemon=1

N=${REDIS_N:-10000}
CLIENTS=20
TESTS=incr,set,get,lpush
NTESTS=4

cli() { timeout 10 redis-cli -h "$TEST_ADDR" -p "$port" "$@"; }
# info FIELD: a field of the INFO output saved in $WORK/$mode.info
info() { sed -n "s/^$1:\([^\r]*\)\r*$/\1/p" "$WORK/$mode.info"; }

declare -A dbsize connections
port=16379
for mode in plain smcr; do
	start_bg "redis-$mode" "$mode" redis-server --save '' --appendonly no --port "$port" \
		--bind "$TEST_ADDR" --protected-mode no --dir "$WORK" --logfile "$WORK/redis-$mode.log"
	srv=$LAST_PID
	wait_port "$port" "$srv" || continue

	run_mode "$mode" timeout 40 redis-benchmark -h "$TEST_ADDR" -p "$port" -n "$N" -c "$CLIENTS" -t "$TESTS" -q \
		> "$WORK/bench-$mode.out" 2> "$WORK/bench-$mode.err"
	expect_eq "$mode: redis-benchmark exit status" "$?" 0
	results=$(tr '\r' '\n' < "$WORK/bench-$mode.out" | grep -cE '^(INCR|SET|GET|LPUSH): .*requests per second')
	expect_eq "$mode: redis-benchmark results" "$results" "$NTESTS"

	# Checked with the plain redis-cli in both modes.
	expect_eq "$mode: INCR counter" "$(cli GET counter:__rand_int__)" "$N"
	expect_eq "$mode: LPUSH list length" "$(cli LLEN mylist)" "$N"
	dbsize[$mode]=$(cli DBSIZE)
	cli INFO > "$WORK/$mode.info"
	expect_eq "$mode: event loop" "$(info multiplexing_api)" epoll
	conns=$(info total_connections_received)
	connections[$mode]=$conns
	net_in=$(info total_net_input_bytes)
	net_out=$(info total_net_output_bytes)

	if [ "$mode" = smcr ] && [ "$daemon" = 1 ]; then
		# Every connection is closed and the server still runs: each
		# buffer it had (over rdma, the staging buffers too) is back with
		# max_memory.
		memory_back "$mode: max_memory in use once the connections closed"
	fi
	cli SHUTDOWN NOSAVE > /dev/null 2>&1
	stop_bg "$srv" -
	expect_eq "$mode: redis-server exit status" "$?" 0

	if [ "$mode" = smcr ]; then
		err=$WORK/redis-$mode.err
		berr=$WORK/bench-$mode.err
		# The benchmark opens $CLIENTS connections per test, plus one or
		# more to read the server's configuration.
		expect_at_least "redis-benchmark connects seen by libsmcr" "$(seen "$berr" connect)" $((CLIENTS * NTESTS))
		read -r _ b_cli _ b_in b_out <<< "$(summary "$berr" redis-benchmark)"
		expect_eq "redis-benchmark libsmcr summary: client connections" "${b_cli:-none}" "$(seen "$berr" connect)"
		# Every connection redis counted (up to INFO), plus SHUTDOWN's.
		expect_eq "redis-server accepts seen by libsmcr" "$(seen "$err" accepted)" $((conns + 1))
		read -r s_lis _ s_srv s_in s_out <<< "$(summary "$err" redis-server "$srv")"
		expect_eq "redis-server libsmcr summary: listeners" "${s_lis:-none}" 1
		expect_eq "redis-server libsmcr summary: server connections" "${s_srv:-none}" $((conns + 1))
		# redis read everything the benchmark sent and sent everything it
		# read; libsmcr in the server counted what redis counted, plus the
		# SHUTDOWN command (a few dozen bytes) after INFO.
		expect_at_least "redis total_net_input_bytes vs benchmark's libsmcr bytes out" "$net_in" "${b_out:-1}"
		expect_at_least "redis total_net_output_bytes vs benchmark's libsmcr bytes in" "$net_out" "${b_in:-1}"
		expect_at_least "redis-server libsmcr bytes in vs redis total_net_input_bytes" "${s_in:-0}" "$net_in"
		expect_at_least "redis-server libsmcr bytes out vs redis total_net_output_bytes" "${s_out:-0}" "$net_out"
		# Not counted by redis at INFO time: INFO's own reply (its text
		# plus a RESP header) and SHUTDOWN.
		info_len=$(wc -c < "$WORK/$mode.info")
		if [ "${s_in:-0}" -le $((net_in + 100)) ] && [ "${s_out:-0}" -le $((net_out + info_len + 100)) ]; then
			pass "redis-server libsmcr bytes ($s_in in, $s_out out) match redis's ($net_in, $net_out + INFO reply $info_len)"
		else
			fail "redis-server libsmcr bytes (${s_in:-none} in, ${s_out:-none} out) too far above redis's ($net_in, $net_out + INFO reply $info_len)"
		fi
		expect_at_least "benchmark bytes out" "${b_out:-0}" $((N * NTESTS * 20))
		# Every benchmark connection; the server's end of each plain
		# one falls back: wait_port's, redis-cli's (GET, LLEN, DBSIZE,
		# INFO, SHUTDOWN).
		[ "$daemon" = 0 ] || on_transport redis "$(seen "$berr" connect)" $((N * NTESTS * 20)) 6
	else
		if grep -q libsmcr "$WORK/redis-$mode.err" "$WORK/bench-$mode.err"; then
			fail "libsmcr lines in the plain run"
		fi
	fi
	port=$((port + 1))
done
expect_eq "DBSIZE plain vs preload" "${dbsize[smcr]:-}" "${dbsize[plain]:-x}"
expect_eq "connections redis counted, plain vs preload" "${connections[smcr]:-}" "${connections[plain]:-x}"
finish
