#!/bin/bash
# connect.sh BUILD_DIR [ROUNDS] - what negotiation costs per connection.
#
# connect/accept/close pairs on loopback (bench/connect), median of ROUNDS
# runs in each setting, alternated so that drift hits all alike:
#   plain            no smcrd, no preload
#   preload          libsmcr, no smcrd (registration refused: NODAEMON)
#   bpf              smcrd running (option on SYN and SYN-ACK), no preload
#   smcr             smcrd and libsmcr: negotiated, result looked up per socket
# A benchmark, not a test; needs root (smcrd loads a BPF program).
set -eu
build=$(cd "${1:?usage: $0 BUILD_DIR [ROUNDS]}" && pwd)
rounds=${2:-5}
prog=$build/bin/bench_connect
lib=$build/lib/libsmcr.so
port=17990
export SMCR_RUNDIR=$(mktemp -d /tmp/smcr-bench.XXXXXX)
conf=$SMCR_RUNDIR/smcr.conf
cat > "$conf" << CONF
enabled = 1
ip_addr_list = 127.0.0.1
port_range_list = $port
CONF

daemon=
start_daemon() { "$build/bin/smcrd" -f -c "$conf" 2> /dev/null & daemon=$!; sleep 0.5; }
stop_daemon() { kill "$daemon"; wait "$daemon" 2> /dev/null || true; }
trap 'kill $daemon 2> /dev/null; rm -rf "$SMCR_RUNDIR"' EXIT
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

declare -A t
for _ in $(seq "$rounds"); do
	t[plain]+="$("$prog" $port) "
	t[preload]+="$(LD_PRELOAD=$lib "$prog" $port) "
	start_daemon
	t[bpf]+="$("$prog" $port) "
	t[smcr]+="$(LD_PRELOAD=$lib "$prog" $port) "
	stop_daemon
done
base=$(echo ${t[plain]} | tr ' ' '\n' | median)
for mode in plain preload bpf smcr; do
	m=$(echo ${t[$mode]} | tr ' ' '\n' | median)
	printf '%-8s %8.2f us per connect+accept+close  (%+.2f us, x%.2f)\n' "$mode" "$m" \
		"$(awk "BEGIN {print $m - $base}")" "$(awk "BEGIN {print $m / $base}")"
done
