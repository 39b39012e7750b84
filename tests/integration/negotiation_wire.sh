#!/bin/bash
# negotiation_wire.sh BUILD_DIR - the SMC-R TCP option (fe 06 e2 d4 c3 d9) as
# smcrd's sock_ops program puts it on the wire, and what it records.
#
# Root (BPF, cgroups, network namespaces); tcpdump and ip.  Loopback
# connections by tests/progs/hs_probe, which prints the SMCR_HS_* flags the
# program recorded for its socket; a tcpdump capture per network namespace,
# read per port.
#   allowed port over 127.0.0.1, ::1 and a dual-stack listener: option on SYN
#     and SYN-ACK, both sides NEGOTIATED
#   a client or server socket libsmcr did not mark (a process without it):
#     no option from it, no echo to it
#   port outside port_range_list, local address outside ip_addr_list (client
#     or server side), enabled = 0 after a live reload: no option / no echo
#   syncookie SYN-ACK (netns, tcp_syncookies=2): no echo, both sides fall back
#   full TCP header (netns, TCP-MD5 + TFO request): no option, counted
#   kill -9 smcrd: no option at all (the bpf_link died with it)
#   smcrd -C CGROUP, server inside, client outside: no option, no echo;
#     both inside: negotiated again
. "$(dirname "$0")/lib.sh" "$1"
need tcpdump ip
if [ "$(id -u)" != 0 ]; then
	echo "FAIL: needs root (BPF programs, cgroups, network namespaces)"
	exit 1
fi

PROBE=$BIN/hs_probe
CONF=$WORK/smcr.conf
# The cgroup v2 root, or the cgroup this run is confined to (lib.sh).
CG2=${SMCR_TEST_CGROUP:-$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)}
TESTCG=$CG2/smcr-wire-test.$$
NETNS=smcr-wire.$$
export SMCR_RUNDIR=$WORK/run
unset SMCR_CONF
DAEMON= PROG= CAP=
SERVER_RUN=() CLIENT_RUN=()     # prefixes: where server and client run

on_exit() {
	[ -n "$DAEMON" ] && { kill -9 "$DAEMON"; wait "$DAEMON"; } 2>/dev/null
	ip netns del "$NETNS" 2>/dev/null
	[ -d "$TESTCG" ] && rmdir "$TESTCG"
	cleanup
}
trap on_exit EXIT

write_conf() {
	printf 'enabled = %s\nip_addr_list = 127.0.0.1 ::1\nport_range_list = 17000-17019\n' \
		"$1" > "$CONF"
}

# start_daemon [ARGS...]: smcrd -f in the background; sets DAEMON and PROG.
start_daemon() {
	: > "$WORK/smcrd.log"
	"$BIN/smcrd" -f -c "$CONF" "$@" 2>> "$WORK/smcrd.log" &
	DAEMON=$!
	if ! wait_for "$WORK/smcrd.log" "attached sock_ops program"; then
		fail "smcrd did not attach its program: $(cat "$WORK/smcrd.log")"
		finish
	fi
	PROG=$(sed -n 's/.*attached sock_ops program (id \([0-9]*\)).*/\1/p' "$WORK/smcrd.log")
}

# reload_daemon COMMAND...: runs COMMAND, then waits for smcrd's next "reloaded".
reload_daemon() {
	local before
	before=$(grep -c reloaded "$WORK/smcrd.log")
	"$@" > /dev/null || fail "$*"
	for _ in $(seq 50); do
		[ "$(grep -c reloaded "$WORK/smcrd.log")" -gt "$before" ] && return 0
		sleep 0.1
	done
	fail "smcrd did not reload after $*"
}

# handshake PORT SERVER_ADDR CLIENT_ADDR [SRC]: one connection; sets SERVER and CLIENT.
handshake() {
	local port=$1 server=$2 client=$3 src=${4:-} spid
	: > "$WORK/server.out"
	"${SERVER_RUN[@]}" timeout 20 "$PROBE" listen "$server" "$port" "$PROG" \
		> "$WORK/server.out" 2>&1 &
	spid=$!
	wait_for "$WORK/server.out" listening || fail "port $port: server not listening"
	CLIENT=$("${CLIENT_RUN[@]}" timeout 20 "$PROBE" connect "$client" "$port" "$PROG" $src 2>&1)
	wait "$spid"
	SERVER=$(grep -v listening "$WORK/server.out")
}

# check WHAT PORT SERVER_ADDR CLIENT_ADDR SRC WIRE CLIENT_FLAGS SERVER_FLAGS
check() {
	local what=$1 port=$2 wire
	handshake "$port" "$3" "$4" $5
	for _ in $(seq 50); do       # the capture lags the connection a little
		wire=$(option_on_wire "$CAP" "$port")
		tcpdump -r "$CAP" -nn "tcp port $port" 2>/dev/null | grep -qF 'Flags [S.]' && break
		sleep 0.1
	done
	expect_eq "$what: on the wire" "$wire" "$6"
	expect_eq "$what: recorded" "$CLIENT / $SERVER" "client $7 / server $8"
}

counter() {     # counter N: the program's counter N (enum smcr_sockops_counter)
	"$PROBE" counters "$PROG" | cut -d' ' -f$(($1 + 1))
}

capture "$WORK/host.pcap" "portrange 17000-17099"
CAP=$WORK/host.pcap
write_conf 1
start_daemon ${SMCR_TEST_CGROUP:+-C "$CG2"}     # by default, the root
if grep -q "attached sock_ops program (id $PROG) to $CG2\$" "$WORK/smcrd.log"; then
	pass "smcrd: attached program $PROG to $CG2"
else
	fail "smcrd's start-up line: $(cat "$WORK/smcrd.log")"
fi

# 0x1d: ACTIVE|OPT_SENT|PEER_OPT|NEGOTIATED; 0x1e the same, PASSIVE; 0x05: sent, no echo.
check "127.0.0.1 allowed port" 17000 127.0.0.1 127.0.0.1 "" "SYN=1 SYN-ACK=1" 0x1d 0x1e
check "::1 allowed port" 17001 ::1 ::1 "" "SYN=1 SYN-ACK=1" 0x1d 0x1e
check "dual-stack listener, IPv4 client" 17002 :: 127.0.0.1 "" "SYN=1 SYN-ACK=1" 0x1d 0x1e
# Only sockets that libsmcr marked offer SMC: a process without it cannot speak CLC.
CLIENT_RUN=(env HS_UNMARKED=1)
check "client without libsmcr (unmarked)" 17010 127.0.0.1 127.0.0.1 "" "SYN=0 SYN-ACK=0" none 0x02
CLIENT_RUN=() SERVER_RUN=(env HS_UNMARKED=1)
check "server without libsmcr (unmarked)" 17011 127.0.0.1 127.0.0.1 "" "SYN=1 SYN-ACK=0" 0x05 none
SERVER_RUN=()
check "port outside port_range_list" 17020 127.0.0.1 127.0.0.1 "" "SYN=0 SYN-ACK=0" none none
check "both addresses outside ip_addr_list" 17003 127.0.0.2 127.0.0.2 127.0.0.2 \
	"SYN=0 SYN-ACK=0" none none
check "server address outside ip_addr_list" 17004 127.0.0.2 127.0.0.2 127.0.0.1 \
	"SYN=1 SYN-ACK=0" 0x05 none
negotiated_client=$(counter 4) negotiated_server=$(counter 5)
expect_eq "counters: negotiated client, server" "$negotiated_client $negotiated_server" "3 3"

reload_daemon "$BIN/smcrctl" -c "$CONF" set enabled=0
check "enabled = 0 after a live reload" 17005 127.0.0.1 127.0.0.1 "" "SYN=0 SYN-ACK=0" none none
write_conf 1
reload_daemon kill -HUP "$DAEMON"
check "enabled = 1 again (SIGHUP)" 17006 ::1 ::1 "" "SYN=1 SYN-ACK=1" 0x1d 0x1e

# Network namespaces: their own sysctls, the same cgroup (and so program).
ip netns add "$NETNS" && ip -n "$NETNS" link set lo up || fail "ip netns add $NETNS"
SERVER_RUN=(ip netns exec "$NETNS") CLIENT_RUN=(ip netns exec "$NETNS")
capture "$WORK/netns.pcap" "portrange 17000-17099" ip netns exec "$NETNS"
CAP=$WORK/netns.pcap
ip netns exec "$NETNS" sysctl -qw net.ipv4.tcp_syncookies=2
cookies=$(counter 3)
# 0x42: PASSIVE|SYNCOOKIE (no saved SYN to learn from).
check "syncookie SYN-ACK" 17007 127.0.0.1 127.0.0.1 "" "SYN=1 SYN-ACK=0" 0x05 0x42
expect_eq "counter: syncookie declines" "$(counter 3)" "$((cookies + 1))"

# TCP-MD5, MSS, window scale, SACK and a TFO cookie request leave too little
# room: the SYN goes without the option, counted; the client records
# ACTIVE|NO_SPACE (0x21), the server PASSIVE (0x02).
ip netns exec "$NETNS" sysctl -qw net.ipv4.tcp_syncookies=1 net.ipv4.tcp_fastopen=3
no_space=$(counter 2)
HS_FULL_HEADER=1 check "full TCP header (MD5 + TFO request)" 17008 127.0.0.1 127.0.0.1 "" \
	"SYN=0 SYN-ACK=0" 0x21 0x02
expect_eq "counter: option space exhausted" "$(counter 2)" "$((no_space + 1))"
SERVER_RUN=() CLIENT_RUN=()
CAP=$WORK/host.pcap

{ kill -9 "$DAEMON"; wait "$DAEMON"; } 2>/dev/null      # no "Killed" from bash
DAEMON=
for _ in $(seq 50); do          # the kernel may free it a little later
	"$PROBE" counters "$PROG" > /dev/null 2>&1 || break
	sleep 0.1
done
if "$PROBE" counters "$PROG" > /dev/null 2>&1; then
	fail "program $PROG still loaded after kill -9 of smcrd"
else
	pass "kill -9 smcrd: program $PROG gone"
fi
check "after kill -9 smcrd" 17009 127.0.0.1 127.0.0.1 "" "SYN=0 SYN-ACK=0" none none

mkdir "$TESTCG" || fail "mkdir $TESTCG"
start_daemon -C "$TESTCG"
grep -q "to $TESTCG\$" "$WORK/smcrd.log" && pass "smcrd -C: attached to $TESTCG" ||
	fail "smcrd -C: $(cat "$WORK/smcrd.log")"
IN_TESTCG=(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$TESTCG")
SERVER_RUN=("${IN_TESTCG[@]}")
# 0x02: PASSIVE only: the SYN had no option.
check "server in the cgroup, client outside" 17010 127.0.0.1 127.0.0.1 "" \
	"SYN=0 SYN-ACK=0" none 0x02
CLIENT_RUN=("${IN_TESTCG[@]}")
check "restarted smcrd, both in the cgroup" 17011 127.0.0.1 127.0.0.1 "" \
	"SYN=1 SYN-ACK=1" 0x1d 0x1e
finish
