#!/bin/bash
# handshake.sh BUILD_DIR - what libsmcr records about each connection's
# handshake matches the wire, on both ends.
#
# Real programs under the preload with smcrd running: python3 http.server
# (accept), curl (non-blocking connect) and python3 urllib (blocking
# connect).  For each case a tcpdump capture says whether the SYN and the
# SYN-ACK carried the SMC-R option, and libsmcr's debug lines in client and
# server say what each recorded:
#   both preloaded, 127.0.0.1 and ::1, blocking and non-blocking: negotiated
#   plain client -> preloaded server: no option; server PEERNOSMC
#   preloaded client -> plain server: option, no echo; client PEERNOSMC
#   port outside port_range_list: no option; POLICY on both ends
#   smcrd killed (SIGKILL): no option; NODAEMON on both ends
#   smcrd restarted: negotiated again
# Root (smcrd loads a BPF program); tcpdump.
. "$(dirname "$0")/lib.sh" "$1"
need tcpdump curl python3
[ "$(id -u)" = 0 ] || { fail "needs root (smcrd loads a BPF program)"; finish; }

export SMCR_RUNDIR=$WORK/run
CONF=$WORK/smcr.conf
printf 'enabled = 1\nip_addr_list = 127.0.0.1 ::1\nport_range_list = 17100-17119\n' > "$CONF"
CAP=$WORK/wire.pcap
capture "$CAP" "portrange 17100-17129"
DAEMON=

start_daemon() {
	"${SMCRD[@]}" -f -c "$CONF" 2>> "$WORK/smcrd.log" &
	DAEMON=$!
	BG_PIDS+=($DAEMON)
	wait_for "$WORK/smcrd.log" "loaded $CONF" || fail "smcrd did not start: $(cat "$WORK/smcrd.log")"
}

# What a debug log says of the handshake: "negotiated", a reason name, or "none".
outcome() {
	local line
	line=$(grep -E 'SMC negotiated in the TCP handshake|fallback to TCP: ' "$1" | tail -1)
	case $line in
		*"SMC negotiated"*) echo negotiated ;;
		*"fallback to TCP: "*) sed -E 's/.*fallback to TCP: ([A-Z_]+) .*/\1/' <<< "$line" ;;
		*) echo none ;;
	esac
}

# case NAME PORT ADDR SERVER_MODE CLIENT_MODE CLIENT(curl|urllib) WIRE SERVER_SAYS CLIENT_SAYS
case_() {
	local name=$1 port=$2 addr=$3 smode=$4 cmode=$5 client=$6 url code
	local serr=$WORK/$port.server.err cerr=$WORK/$port.client.err server
	start_bg "$port.server" "$smode" "$PY" -m http.server "$port" --bind "$addr"
	server=$LAST_PID
	wait_listen "$port" "$server" || return
	case $addr in *:*) url="http://[$addr]:$port/" ;; *) url="http://$addr:$port/" ;; esac
	if [ "$client" = curl ]; then
		code=$(run_mode "$cmode" timeout 20 curl -s -o /dev/null -w '%{http_code}' "$url" 2> "$cerr")
	else
		code=$(run_mode "$cmode" timeout 20 "$PY" -c '
import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1]).status)' "$url" 2> "$cerr")
	fi
	for _ in $(seq 50); do grep -q '"GET / HTTP' "$serr" && break; sleep 0.1; done
	kill "$server"; wait "$server" 2> /dev/null
	for _ in $(seq 20); do      # the capture lags the connection a little
		tcpdump -r "$CAP" -nn "tcp port $port" 2> /dev/null | grep -qF 'Flags [S.]' && break
		sleep 0.1
	done
	expect_eq "$name: HTTP status" "$code" 200
	expect_eq "$name: on the wire" "$(option_on_wire "$CAP" "$port")" "$7"
	[ "$smode" = smcr ] && expect_eq "$name: server recorded" "$(outcome "$serr")" "$8"
	[ "$cmode" = smcr ] && expect_eq "$name: client recorded" "$(outcome "$cerr")" "$9"
	return 0
}

start_daemon
case_ "127.0.0.1, non-blocking connect" 17100 127.0.0.1 smcr smcr curl "SYN=1 SYN-ACK=1" negotiated negotiated
case_ "127.0.0.1, blocking connect" 17101 127.0.0.1 smcr smcr urllib "SYN=1 SYN-ACK=1" negotiated negotiated
case_ "::1, non-blocking connect" 17102 ::1 smcr smcr curl "SYN=1 SYN-ACK=1" negotiated negotiated
case_ "::1, blocking connect" 17103 ::1 smcr smcr urllib "SYN=1 SYN-ACK=1" negotiated negotiated
case_ "plain client, preloaded server" 17104 127.0.0.1 smcr plain curl "SYN=0 SYN-ACK=0" PEERNOSMC -
case_ "preloaded client, plain server" 17105 127.0.0.1 plain smcr urllib "SYN=1 SYN-ACK=0" - PEERNOSMC
case_ "port outside port_range_list" 17120 127.0.0.1 smcr smcr curl "SYN=0 SYN-ACK=0" POLICY POLICY

kill -9 "$DAEMON"; wait "$DAEMON" 2> /dev/null
case_ "smcrd killed" 17106 127.0.0.1 smcr smcr curl "SYN=0 SYN-ACK=0" NODAEMON NODAEMON
case_ "smcrd killed, blocking connect" 17107 127.0.0.1 smcr smcr urllib "SYN=0 SYN-ACK=0" NODAEMON NODAEMON
start_daemon
case_ "smcrd restarted" 17108 127.0.0.1 smcr smcr curl "SYN=1 SYN-ACK=1" negotiated negotiated
finish
