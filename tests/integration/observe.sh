#!/bin/bash
# observe.sh BUILD_DIR - what smcrctl shows of real traffic: stats (open
# and peak connections, buffer full, RMB histogram, exact bytes, fallback
# reasons, -d, -i, -r, --json), conns (one line per open connection: mode,
# reason, state, RMB sizes, cursors, bytes; filters; nothing once closed)
# and check (shm for a local server; POLICY for a port outside
# port_range_list, or with enabled=0; NODAEMON without smcrd, each with its
# advice).  Root (smcrd loads a BPF program).
#
#   A. a python client under the preload sends 1 MiB to a python server
#      that waits 1.5 s before it reads (a deliberate pause): the ring
#      fills (buffer full on both sides), the cursors wrap (four times with
#      256 KiB RMBs: the RMB size is read from smcrctl stats, not assumed)
#   B. socat echo on a port outside port_range_list: TCP, reason POLICY
#   K. a client on shm killed with SIGKILL: its records go, its bytes stay
. "$(dirname "$0")/lib.sh" "$1"
need python3 socat
[ "$(id -u)" = 0 ] || { fail "needs root (smcrd loads a BPF program)"; finish; }

export SMCR_RUNDIR=$WORK/run
CONF=$WORK/smcr.conf
printf 'enabled = 1\nip_addr_list = 127.0.0.1\nport_range_list = 17600-17609\n' > "$CONF"
start_bg smcrd plain "${SMCRD[@]}" -f -c "$CONF"
SMCRD=$LAST_PID
for _ in $(seq 50); do "$BIN/smcrctl" status > /dev/null 2>&1 && break; sleep 0.1; done
"$BIN/smcrctl" status > /dev/null || { fail "smcrd did not start: $(cat "$WORK/smcrd.err")"; finish; }

MIB=$((1 << 20))
ctl() { "$BIN/smcrctl" -c "$CONF" "$@"; }
json() { ctl stats --json | "$PY" -c "import json, sys; j = json.load(sys.stdin); print($1)"; }
conns_json() { ctl conns --json "${@:2}" | "$PY" -c "import json, sys; c = json.load(sys.stdin); print($1)"; }

# A. the slow reader
cat > "$WORK/server.py" <<'PY'
import os, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', int(sys.argv[1])))
s.listen()
c, _ = s.accept()
time.sleep(1.5)                 # the writer fills the ring meanwhile
n = 0
while n < int(sys.argv[2]):
    b = c.recv(65536)
    if not b:
        break
    n += len(b)
print(n, flush=True)
while not os.path.exists(sys.argv[3]):
    time.sleep(0.05)
c.close()
PY
cat > "$WORK/client.py" <<'PY'
import os, socket, sys, time
c = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
c.sendall(b'x' * int(sys.argv[2]))
print('sent', flush=True)
while not os.path.exists(sys.argv[3]):
    time.sleep(0.05)
c.close()
PY
start_bg a-server smcr "$PY" "$WORK/server.py" 17600 $MIB "$WORK/done-a"
SRV=$LAST_PID
wait_listen 17600 "$SRV"
start_bg a-client smcr "$PY" "$WORK/client.py" 17600 $MIB "$WORK/done-a"
CLI=$LAST_PID
wait_for "$WORK/a-server.out" "^$MIB\$" || fail "the server did not read 1 MiB: $(cat "$WORK/a-server.out")"
wait_for "$WORK/a-client.out" sent || fail "the client did not finish sending"
# The RMB libsmcr gave the two ends (whatever rmb_size is set to), its
# histogram column's name, and where a cursor is after N bytes.
RMB=$(rmb_size shm) || { fail "smcrctl stats --json: no shm RMB"; finish; }
if [ "$RMB" -ge "$MIB" ]; then RMB_NAME=$((RMB / MIB))MiB; else RMB_NAME=$((RMB / 1024))KiB; fi
cursor() { printf '%04x:%08x' $(($1 / RMB)) $(($1 % RMB)); }

ctl conns > "$WORK/conns.txt"
cat "$WORK/conns.txt"
expect_eq "conns: two lines on port 17600" "$(grep -c ':17600 ' "$WORK/conns.txt")" 2
expect_eq "conns --mode shm --port 17600" "$(ctl conns --mode shm --port 17600 | tail -n +2 | wc -l)" 2
expect_eq "conns --mode tcp --port 17600" "$(ctl conns --mode tcp --port 17600 | tail -n +2 | wc -l)" 0
expect_eq "conns --pid (client)" "$(ctl conns --pid "$CLI" | tail -n +2 | awk '{print $1, $6, $7}')" "$CLI shm ACTIVE"
expect_eq "conns: client: RMBs, tx_prep after $((MIB / RMB)) wraps, bytes out" \
	"$(conns_json "[(x['rmb_size'], x['peer_rmb_size'], x['tx_prep'], x['bytes_out']) for x in c]" --pid "$CLI")" \
	"[($RMB, $RMB, '$(cursor $MIB)', $MIB)]"
expect_eq "conns: server: rx_prod, rx_cons after $((MIB / RMB)) wraps, bytes in" \
	"$(conns_json "[(x['role'], x['rx_prod'], x['rx_cons'], x['bytes_in']) for x in c]" --pid "$SRV")" \
	"[('server', '$(cursor $MIB)', '$(cursor $MIB)', $MIB)]"
expect_at_least "conns: client found the peer's RMB full" \
	"$(conns_json "c[0]['buffer_full_remote']" --pid "$CLI")" 1
expect_at_least "conns: the server's RMB filled up" "$(conns_json "c[0]['buffer_full_local']" --pid "$SRV")" 1

ctl stats -d > "$WORK/stats-open.txt"
cat "$WORK/stats-open.txt"
line() { grep -qE "$2" "$1" && pass "$3" || fail "$3 (no line matching '$2' in $(basename "$1"))"; }
line "$WORK/stats-open.txt" "^  Open now: +2\$" "text: 2 open now"
# The histogram's row: 2 in the RMB's column, 0 in the others (from --json's).
row=$(json "' +'.join('2' if k == '$RMB_NAME' else '0' for k in j['transports']['shm']['rmbs'])")
line "$WORK/stats-open.txt" "^ +$row\$" "text: histogram: two $RMB_NAME RMBs"
line "$WORK/stats-open.txt" "^  shm +1 +1 +0 +$MIB +$MIB " "text -d: shm row: 1 client, 1 server, bytes each way"
line "$WORK/stats-open.txt" "^  rdma +0 +0 +0 +0 +0 " "text -d: rdma row, empty (both ends on this host)"
line "$WORK/stats-open.txt" "^RDMA links" "text -d: the RDMA links section"
line "$WORK/stats-open.txt" "^  Up now: +0\$" "text -d: no RDMA link up"
expect_eq "json: rdma available, its links" \
	"$(json "(j['transports']['rdma']['available'], j['transports']['rdma']['links_up'], j['transports']['rdma']['wc_recv'])")" \
	"(True, 0, 0)"
line "$WORK/stats-open.txt" "^ +$SRV python3 +1 +1 +1 " "text -d: the server's process row (1 open, peak 1, 1 SMC)"
expect_eq "json: open now, RMB histogram" \
	"$(json "(j['connections']['open'], {k: n for k, n in j['transports']['shm']['rmbs'].items() if n})")" "(2, {'$RMB_NAME': 2})"
expect_at_least "json: buffer full, remote" "$(json "j['data']['buffer_full_remote']")" 1
expect_at_least "json: buffer full, local" "$(json "j['data']['buffer_full_local']")" 1
expect_eq "json: average send over SMC (one send call of 1 MiB)" "$(json "j['data']['smc_avg_send']")" $MIB

touch "$WORK/done-a"
stop_bg "$CLI" -
stop_bg "$SRV" -
expect_eq "conns: nothing on port 17600 once closed" "$(ctl conns --port 17600 | tail -n +2 | wc -l)" 0
expect_eq "json after close: open, peak >= 2, shm bytes in/out exact" \
	"$(json "(j['connections']['open'], j['connections']['open_peak'] >= 2, j['data']['shm_bytes_in'], j['data']['shm_bytes_out'])")" \
	"(0, True, $MIB, $MIB)"

# B. outside port_range_list: plain TCP, reason POLICY at both ends
start_bg b-echo smcr socat TCP-LISTEN:17650,bind=127.0.0.1,reuseaddr,fork PIPE
ECHO=$LAST_PID
wait_listen 17650 "$ECHO"
cat > "$WORK/echo.py" <<'PY'
import os, socket, sys, time
c = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
c.sendall(b'y' * 1000)
n = 0
while n < 1000:
    n += len(c.recv(1000 - n))
print('echoed', n, flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
c.close()
PY
start_bg b-client smcr "$PY" "$WORK/echo.py" 17650 "$WORK/done-b"
BCLI=$LAST_PID
wait_for "$WORK/b-client.out" "echoed 1000" || fail "echo on 17650: $(cat "$WORK/b-client.out")"
ctl conns --port 17650 | tee "$WORK/conns-b.txt"
expect_eq "conns --mode tcp: client and server on 17650" "$(ctl conns --mode tcp --port 17650 | tail -n +2 | wc -l)" 2
line "$WORK/conns-b.txt" "TCP 0x03000200 POLICY +OPEN" "text: TCP with the reason in hex and by name"
expect_eq "conns json: modes, reasons, bytes in/out" \
	"$(conns_json "sorted((x['role'], x['mode'], x['reason'], x['code'], x['bytes_in'], x['bytes_out']) for x in c)" --port 17650)" \
	"[('client', 'TCP', 'POLICY', '0x03000200', 1000, 1000), ('server', 'TCP', 'POLICY', '0x03000200', 1000, 1000)]"
touch "$WORK/done-b"
stop_bg "$BCLI" -
gone() { [ "$(ctl conns --port "$1" | tail -n +2 | wc -l)" = 0 ]; }
until_true gone 17650           # the server's end closes once it has read the client's EOF
expect_eq "conns: nothing on 17650 once closed" "$(ctl conns --port 17650 | tail -n +2 | wc -l)" 0
expect_eq "json: TCP bytes in/out exact (both ends)" \
	"$(json "(j['data']['tcp_bytes_in'], j['data']['tcp_bytes_out'])")" "(2000, 2000)"
expect_eq "json: POLICY twice, by name and code" \
	"$(json "[(r['name'], r['code'], r['count']) for r in j['connections']['fallback_reasons']]")" \
	"[('POLICY', '0x03000200', 2)]"

# K. a client killed with SIGKILL: smcrd drops its records, keeps its traffic
start_bg k-echo smcr socat TCP-LISTEN:17601,bind=127.0.0.1,reuseaddr,fork PIPE
KECHO=$LAST_PID
wait_listen 17601 "$KECHO"
start_bg k-client smcr "$PY" "$WORK/echo.py" 17601 "$WORK/never"
KCLI=$LAST_PID
wait_for "$WORK/k-client.out" "echoed 1000" || fail "echo on 17601: $(cat "$WORK/k-client.out")"
expect_eq "conns: the client to be killed, on shm" "$(ctl conns --pid "$KCLI" --mode shm | tail -n +2 | wc -l)" 1
kill -9 "$KCLI"
until_true gone 17601
expect_eq "conns after SIGKILL: nothing on 17601 (the killer's records dropped, the server's closed)" \
	"$(ctl conns --port 17601 | tail -n +2 | wc -l)" 0
expect_eq "json: shm bytes in/out include the killed client's and its server's" \
	"$(json "(j['data']['shm_bytes_in'], j['data']['shm_bytes_out'])")" "($((MIB + 2000)), $((MIB + 2000)))"
stop_bg "$KECHO" TERM

# C. check
ctl check 127.0.0.1 > "$WORK/check-shm.txt"
expect_eq "check 127.0.0.1 (own server in port_range_list): exit status" "$?" 0
expect_eq "check 127.0.0.1: verdict" "$(cat "$WORK/check-shm.txt")" "using shm"
ctl check 127.0.0.1 17650 > "$WORK/check-tcp.txt"
expect_eq "check 127.0.0.1 17650: exit status" "$?" 1
cat "$WORK/check-tcp.txt"
line "$WORK/check-tcp.txt" "^fallback to TCP: client POLICY \(0x03000200: .*\), server POLICY \(0x03000200" "check: fallback, POLICY on both ends"
line "$WORK/check-tcp.txt" "advice: port 17650 not in port_range_list: smcrctl set port_range_list=17600-17609,17650" "check: the advice names the port and the command"
stop_bg "$ECHO" TERM

# D. -i, -r
ctl stats --json -i 1 -n 2 > "$WORK/interval.json"
expect_eq "stats -i 1 -n 2: two samples, the second with interval 1 and no new connection" \
	"$("$PY" -c "import json, sys; s = [json.loads(l) for l in open(sys.argv[1])]; print(len(s), s[1]['interval'], s[1]['connections']['tcp_clients'])" "$WORK/interval.json")" "2 1 0"
ctl stats -r > /dev/null
expect_eq "after -r: connections, bytes, buffer full, RMBs zero; peak = open = 0" \
	"$(json "(j['connections']['tcp_clients'] + j['connections']['fallbacks'] + sum(j['data'].values()) + sum(j['transports']['shm']['rmbs'].values()), j['connections']['open_peak'], j['connections']['open'])")" "(0, 0, 0)"
ctl stats > "$WORK/stats-reset.txt"
line "$WORK/stats-reset.txt" "^  Open at most: +0\$" "text after -r: peak 0"
line "$WORK/stats-reset.txt" "^  Buffer full, remote \(peer RMB\): +0\$" "text after -r: buffer full 0"
line "$WORK/stats-reset.txt" "^ +0 +0 +0 +0 +0 +0 +0\$" "text after -r: RMB histogram empty"

# E. check's advice when SMC is disabled, and without smcrd
ctl disable > /dev/null
ctl check 127.0.0.1 > "$WORK/check-disabled.txt"
expect_eq "check with enabled=0: exit status" "$?" 1
line "$WORK/check-disabled.txt" "^fallback to TCP: client POLICY" "check with enabled=0: POLICY"
line "$WORK/check-disabled.txt" "advice: enabled=0 in .*: smcrctl enable" "check with enabled=0: advice to enable"
stop_bg "$SMCRD" TERM
ctl check 127.0.0.1 > "$WORK/check-nodaemon.txt"
expect_eq "check without smcrd: exit status" "$?" 3
line "$WORK/check-nodaemon.txt" "^fallback to TCP: NODAEMON \(0x03000100" "check without smcrd: NODAEMON"
line "$WORK/check-nodaemon.txt" "advice: smcrd is not running" "check without smcrd: advice to start it"
finish
