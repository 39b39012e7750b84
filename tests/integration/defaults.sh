#!/bin/bash
# defaults.sh BUILD_DIR - what an install ships is safe as it is: the
# shipped conf/smcr.conf parses, has SMC off and no address and no port
# allowed, as its comments and `smcrctl show` say the defaults are; smcrd
# serving it keeps a preloaded connection on TCP, both ends falling back
# with POLICY, nothing over shared memory; and the systemd unit passes
# systemd-analyze verify (where systemd-analyze is installed).
. "$(dirname "$0")/lib.sh" "$1"
PORT=24120
[ "$(id -u)" = 0 ] || { fail "needs root (smcrd loads a BPF program)"; finish; }
export SMCR_RUNDIR=$WORK/run
CONF=$WORK/smcr.conf
cp "$SRC/conf/smcr.conf" "$CONF"

show=$("$BIN/smcrctl" -c "$CONF" show) || fail "smcrctl show: the shipped file does not parse"
expect_eq "shipped enabled" "$(awk '$1 == "enabled" { print $2 }' <<< "$show")" 0
for key in ip_addr_list port_range_list; do
	# an empty value: the description follows the key
	expect_eq "shipped $key is empty" "$(grep -cE "^$key +(local|server) " <<< "$show")" 1
done

start_bg smcrd plain "${SMCRD[@]}" -f -c "$CONF"
wait_for "$WORK/smcrd.err" "loaded $CONF" || { fail "smcrd did not start: $(cat "$WORK/smcrd.err")"; finish; }
expect_eq "smcrd serves it" "$(grep -o "loaded $CONF (.*)" "$WORK/smcrd.err")" \
	"loaded $CONF (enabled=0, 0 addresses, 0 port ranges, max_memory=256 MB)"

start_bg held smcr "$PY" "$SRC/tests/integration/hold_conn.py" "$TEST_ADDR" "$PORT"
wait_for "$WORK/held.out" '^held' || { fail "no connection held"; finish; }
read -r _ server client < "$WORK/held.out"
for pid in "$server" "$client"; do
	expect_eq "process $pid's connection: mode, reason" \
		"$(conn_field "$pid" mode) $(conn_field "$pid" reason)" "TCP POLICY"
done
expect_eq "connection ends fallen back with POLICY" "$(fallback_count POLICY)" 2
on_transport "shipped configuration" 0 0
expect_eq "SMC negotiated (client, server)" "$(stats_counter smc_clients) $(stats_counter smc_servers)" "0 0"

if command -v systemd-analyze > /dev/null; then
	# as installed, but for where smcrd is
	sed "s|@sbindir@/smcrd|$BIN/smcrd|" "$SRC/conf/smcrd.service" > "$WORK/smcrd.service"
	# its Documentation= pages, which verify looks up with man, as installed
	mkdir -p "$WORK/man/man8"
	ln -s "$SRC/smcrd/smcrd.8" "$SRC/tools/smcrctl.8" "$WORK/man/man8/"
	out=$(MANPATH=$WORK/man systemd-analyze verify "$WORK/smcrd.service" 2>&1) &&
		pass "systemd-analyze verify smcrd.service" || fail "systemd-analyze verify: $out"
fi
finish
