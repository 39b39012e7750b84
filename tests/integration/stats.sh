#!/bin/bash
# stats.sh BUILD_DIR - smcrctl stats: the host's statistics, summed by smcrd
# from the shared counters of every process using smcr, exited ones included.
#
# Real programs under the preload, all stopped before each reading:
#   python3 http.server and N preloaded curls: 2N handshake outcomes, each
#   counted as the ends recorded it in their debug logs (SMC, or the reason
#   it was not); bytes in == bytes out == what the curls sent and received
#   plain curls to it: PEERNOSMC on the server, by name and code
#   a server and curl on a port outside port_range_list: POLICY on both ends
# then: --json is valid JSON with the same figures; -r resets (next reading
# zero); a second batch (socat fork: the parent accepts, children serve) is
# counted exactly, children's bytes once.  Root (smcrd loads a BPF program).
. "$(dirname "$0")/lib.sh" "$1"
need curl python3 socat
[ "$(id -u)" = 0 ] || { fail "needs root (smcrd loads a BPF program)"; finish; }

export SMCR_RUNDIR=$WORK/run
CONF=$WORK/smcr.conf
printf 'enabled = 1\nip_addr_list = 127.0.0.1\nport_range_list = 17300-17309\n' > "$CONF"
"${SMCRD[@]}" -f -c "$CONF" 2>> "$WORK/smcrd.log" &
BG_PIDS+=($!)
wait_for "$WORK/smcrd.log" "loaded $CONF" || { fail "smcrd did not start: $(cat "$WORK/smcrd.log")"; finish; }

mkdir "$WORK/www"
head -c 200000 /dev/urandom > "$WORK/www/blob"
N=4
SUM=0                           # bytes the preloaded curls sent and received

# json FIELD...: one figure of smcrctl stats --json (a Python expression on j).
json() { "$BIN/smcrctl" stats --json | "$PY" -c "import json, sys; j = json.load(sys.stdin); print($1)"; }

# outcomes: what the debug logs of batch $BATCH say each end recorded, as
# "smc=N REASON=N ..." sorted; the same from smcrctl stats --json.
outcomes() {
	cat "$WORK"/b$BATCH.*.err | sed -nE 's/.*SMC negotiated in the TCP handshake.*/smc/p;
		s/.*fallback to TCP: ([A-Z_]+) .*/\1/p' | sort | uniq -c | awk '{print $2 "=" $1}' | sort | xargs
}
counted() {
	json "' '.join(sorted(([f'smc={j[\"connections\"][\"smc_clients\"] + j[\"connections\"][\"smc_servers\"]}'] if j['connections']['smc_clients'] + j['connections']['smc_servers'] else []) + [f'{r[\"name\"]}={r[\"count\"]}' for r in j['connections']['fallback_reasons']]))"
}
BATCH=1

# server PORT: a preloaded http.server serving $WORK/www; $SERVER its pid.
server() {
	start_bg "b$BATCH.http$1" smcr "$PY" -m http.server "$1" --bind 127.0.0.1 --directory "$WORK/www"
	SERVER=$LAST_PID
	wait_listen "$1" "$SERVER"
}

# request_bytes PORT: the length of curl's GET of /blob.  Not curl's own
# %{size_request}, which leaves out a request whose first send() found the
# connection not yet writable (EAGAIN while the CLC exchange waits for the
# server to accept), though every byte of it was sent.
request_bytes() {
	printf 'GET /blob HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nUser-Agent: curl/%s\r\nAccept: */*\r\n\r\n' \
		"$1" "$(curl --version | awk 'NR == 1 { print $2 }')" | wc -c
}

# get MODE PORT: one download; preloaded ones add their bytes to SUM.
get() {
	local sizes
	sizes=$(run_mode "$1" curl -s -o /dev/null -w '%{size_header} %{size_download}' \
		"http://127.0.0.1:$2/blob" 2> "$(mktemp "$WORK/b$BATCH.curl.XXXXXX.err")") ||
		fail "curl $1 to port $2"
	[ "$1" = smcr ] && SUM=$((SUM + $(tr ' ' + <<< "$sizes") + $(request_bytes "$2")))
	return 0
}

server 17300
for _ in $(seq $N); do get smcr 17300; done
get plain 17300
get plain 17300
stop_bg "$SERVER" INT
server 17320
get smcr 17320
stop_bg "$SERVER" INT

"$BIN/smcrctl" stats > "$WORK/stats.txt" || fail "smcrctl stats exits non-zero"
cat "$WORK/stats.txt"
line() { grep -qE "$1" "$WORK/stats.txt" && pass "text: $2" || fail "text: $2 (no line matching '$1')"; }
line "TCP client connections seen: +$((N + 1))\$" "$((N + 1)) TCP clients"
line "TCP server connections seen: +$((N + 3))\$" "$((N + 3)) TCP servers"
line "SMC negotiated, client: +$N\$" "$N SMC clients"
line "SMC negotiated, server: +$N\$" "$N SMC servers"
line "PEERNOSMC \(0x03010000\): 2\$" "PEERNOSMC by name and code"
line "POLICY \(0x03000200\): 2\$" "POLICY by name and code"
line "Exited: +$((N + 3))\$" "exited processes counted (servers and preloaded curls)"
line "Registered now: +0\$" "none registered now"
line "Open now: +0\$" "no connection open"

"$BIN/smcrctl" stats --json | "$PY" -m json.tool > /dev/null && pass "--json is valid JSON" ||
	fail "--json is not valid JSON: $("$BIN/smcrctl" stats --json)"
expect_eq "json: outcomes as the ends recorded them" "$(counted)" "$(outcomes)"
expect_eq "json: outcomes recorded" \
	"$(json "j['connections']['smc_clients'] + j['connections']['smc_servers'] + j['connections']['fallbacks']")" $((2 * N + 4))
SMC1=$(json "j['connections']['smc_clients']")
expect_eq "json: PEERNOSMC" "$(fallback_count PEERNOSMC)" 2
expect_eq "json: POLICY" "$(fallback_count POLICY)" 2
expect_eq "json: POLICY code" "$(json "[r['code'] for r in j['connections']['fallback_reasons'] if r['name'] == 'POLICY'][0]")" 0x03000200
# The plain curls' bytes were seen by the server only; the rest by both ends.
IN=$(json "j['data']['tcp_bytes_in'] + j['data']['shm_bytes_in']")
OUT=$(json "j['data']['tcp_bytes_out'] + j['data']['shm_bytes_out']")
expect_at_least "bytes out" "$OUT" $(((N + 3) * 200000))
PLAIN=$((OUT - IN))             # what the server sent the plain curls, less their requests
expect_at_least "bytes to plain curls" "$PLAIN" $((2 * 200000))

if SMCR_RUNDIR=$SMCR_RUNDIR setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$BIN/smcrctl" stats -r > /dev/null 2> "$WORK/reset.err"; then
	fail "stats -r as nobody succeeded"
else
	grep -q 'only root' "$WORK/reset.err" && pass "stats -r refused to nobody: $(cat "$WORK/reset.err")" ||
		fail "stats -r as nobody: $(cat "$WORK/reset.err")"
fi
"$BIN/smcrctl" stats -r | grep -qE "SMC negotiated, client: +$SMC1\$" && pass "-r prints before it resets" ||
	fail "-r did not print the statistics"
expect_eq "after -r: everything zero" \
	"$(json "sum(j['connections'][k] for k in ('tcp_clients', 'tcp_servers', 'smc_clients', 'smc_servers', 'fallbacks')) + sum(j['data'].values()) + j['processes']['exited']")" 0

# Second batch: exact again, counted from the reset.
SUM=0
BATCH=2
server 17301
for _ in $(seq $N); do get smcr 17301; done
stop_bg "$SERVER" INT
expect_eq "batch 2: outcomes as the ends recorded them" "$(counted)" "$(outcomes)"
expect_eq "batch 2: SMC negotiated client, server" \
	"$(json "(j['connections']['smc_clients'], j['connections']['smc_servers'])")" "($N, $N)"
expect_eq "batch 2: TCP clients, servers" "$(json "(j['connections']['tcp_clients'], j['connections']['tcp_servers'])")" "($N, $N)"
expect_eq "batch 2: bytes in == out == what the curls saw" \
	"$(json "(j['data']['tcp_bytes_in'] + j['data']['shm_bytes_in'], j['data']['tcp_bytes_out'] + j['data']['shm_bytes_out'])")" "($SUM, $SUM)"
expect_eq "batch 2: exited processes" "$(json "j['processes']['exited']")" $((N + 1))

# socat fork: the parent accepts, a child per connection echoes; each child
# counts its own bytes (not into its parent's region), once.
"$BIN/smcrctl" stats -r > /dev/null
BATCH=3
start_bg b3.socat smcr socat TCP-LISTEN:17302,bind=127.0.0.1,reuseaddr,fork PIPE
SOCAT=$LAST_PID
wait_listen 17302 "$SOCAT"
for _ in $(seq $N); do
	got=$(echo hello | run_mode smcr socat -t 2 - TCP:127.0.0.1:17302 \
		2> "$(mktemp "$WORK/b3.client.XXXXXX.err")")
	[ "$got" = hello ] || fail "socat echo: '$got'"
done
# The last child is gone once its peer is: only the listener is registered.
listener_only() { [ "$(json "j['processes']['registered']")" = 1 ]; }
until_true listener_only
expect_eq "socat: TCP servers (parent's accepts), clients" \
	"$(json "(j['connections']['tcp_servers'], j['connections']['tcp_clients'])")" "($N, $N)"
expect_eq "socat: outcomes as the ends recorded them" "$(counted)" "$(outcomes)"
expect_eq "socat: bytes in, out (6 each way per connection, children's once)" \
	"$(json "(j['data']['tcp_bytes_in'] + j['data']['shm_bytes_in'], j['data']['tcp_bytes_out'] + j['data']['shm_bytes_out'])")" "($((12 * N)), $((12 * N)))"
expect_eq "socat: registered now (the listener)" "$(json "j['processes']['registered']")" 1
stop_bg "$SOCAT" TERM
finish
