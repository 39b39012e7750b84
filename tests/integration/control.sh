#!/bin/bash
# smcrd's control socket: registration, status, memory grants against
# max_memory (refused beyond it, all returned when a process exits or is
# killed), reload rights (root only), and libsmcr registering on its own.
. "$(dirname "$0")/lib.sh"

export SMCR_RUNDIR=$WORK/run
conf=$WORK/smcr.conf
cp "$(dirname "$0")/../../conf/smcr.conf" "$conf"
"$BIN/smcrctl" -c "$conf" set max_memory=1 "ip_addr_list=127.0.0.1 ::1 10.213.7.1" > /dev/null

status() { "$BIN/smcrctl" status; }
used() { status | sed -n 's/^memory: *\([0-9.]*\) MiB.*/\1/p'; }

out=$(status); rc=$?
expect_eq "status without smcrd exits" "$rc" 3
if grep -q "not running" <<< "$out"; then pass "status says smcrd is not running"; else fail "status: $out"; fi

start_bg smcrd plain "${SMCRD[@]}" -f -c "$conf"
daemon=$LAST_PID
for _ in $(seq 50); do status > /dev/null && break; sleep 0.1; done
out=$(status)
if grep -q "running (pid $daemon)" <<< "$out" && grep -q "of max_memory 1 MiB" <<< "$out" &&
   grep -q "0 registered" <<< "$out"; then
	pass "status: running, max_memory 1 MiB, no process"
else
	fail "status: $out"
fi

# One smcrd per host, even with its pid file elsewhere: two programs would
# both write the option on every SYN.
out=$(SMCR_RUNDIR=$WORK/run2 timeout 20 "${SMCRD[@]}" -f -c "$conf" 2>&1); rc=$?
expect_eq "a second smcrd (other run directory) exits" "$rc" 1
if grep -q "another smcrd's program (id [0-9]*) already runs for .*: one smcrd per host" <<< "$out"; then
	pass "it says another smcrd's program runs"
else
	fail "second smcrd: $out"
fi

# ip_addr_list entries are checked against the host's addresses, live (rtnetlink).
if grep -q "ip_addr_list entry 10.213.7.1 is on no interface" "$WORK/smcrd.err"; then
	pass "smcrd warns about an ip_addr_list entry on no interface"
else
	fail "no warning for 10.213.7.1: $(cat "$WORK/smcrd.err")"
fi
addrs() { status | sed -n 's/^addresses: *//p'; }
expect_eq "status: addresses and interfaces" "$(addrs)" "127.0.0.1 lo, ::1 lo, 10.213.7.1 -"
veth=smcrc$$
if ip link add "$veth" type veth peer name "${veth}p" && ip addr add 10.213.7.1/24 dev "$veth"; then
	for _ in $(seq 30); do addrs | grep -q "10.213.7.1 $veth" && break; sleep 0.1; done
	expect_eq "status after the address appeared" "$(addrs)" "127.0.0.1 lo, ::1 lo, 10.213.7.1 $veth"
	wait_for "$WORK/smcrd.err" "10.213.7.1 is on an interface again" &&
		pass "smcrd noticed the address appear" || fail "no notice: $(cat "$WORK/smcrd.err")"
	ip link del "$veth"
	for _ in $(seq 30); do addrs | grep -q "10.213.7.1 -" && break; sleep 0.1; done
	expect_eq "status after the interface went" "$(addrs)" "127.0.0.1 lo, ::1 lo, 10.213.7.1 -"
	expect_eq "warnings about 10.213.7.1" "$(grep -c '10.213.7.1 is on no interface' "$WORK/smcrd.err")" 2
else
	fail "cannot create a veth pair to add an address"
fi

# 1 MiB = 1048576 bytes: 600000 fits, a second 600000 does not.
"$BIN/grant_client" --hold 600000 600000 > "$WORK/holder.out" &
holder=$!
BG_PIDS+=($holder)
for _ in $(seq 50); do grep -q done "$WORK/holder.out" && break; sleep 0.1; done
expect_eq "first grant" "$(sed -n 1p "$WORK/holder.out")" "granted 600000"
expect_eq "grant beyond max_memory" "$(sed -n 2p "$WORK/holder.out")" "refused 600000: Cannot allocate memory"
out=$(status)
if grep -qE "^ +$holder +0 +600000 +grant_client" <<< "$out"; then pass "status lists the holder with its 600000 bytes"; else fail "status: $out"; fi

# A process that exits returns its grants.
expect_eq "short-lived process" "$("$BIN/grant_client" 400000 | head -1)" "granted 400000"
expect_eq "its grant returned at exit: MiB in use" "$(used)" "0.6"

# SIGKILL: the kernel closes the control socket, smcrd takes everything back.
kill -9 "$holder"; wait "$holder" 2> /dev/null
for _ in $(seq 50); do [ "$(used)" = "0.0" ] && break; sleep 0.1; done
expect_eq "grants of a SIGKILLed process returned: MiB in use" "$(used)" "0.0"
if status | grep -q "0 registered"; then pass "killed process no longer registered"; else fail "status: $(status)"; fi
expect_eq "the whole budget is grantable again" "$("$BIN/grant_client" 1048576 | head -1)" "granted 1048576"

# libsmcr registers by itself at its first TCP connection.
"$PY" -m http.server 19201 --bind 127.0.0.1 > /dev/null 2>&1 &
BG_PIDS+=($!)
wait_port 19201
LD_PRELOAD=$PRELOAD "$PY" -c '
import socket, time
s = socket.create_connection(("127.0.0.1", 19201))
time.sleep(3)' &
client=$!
BG_PIDS+=($client)
for _ in $(seq 30); do status | grep -qE "^ +$client .*python3" && break; sleep 0.1; done
if status | grep -qE "^ +$client .*python3"; then pass "a preloaded python3 registered at its first connect"; else fail "status: $(status)"; fi
wait "$client"

# Only root may reload: an unprivileged smcrctl's change is saved but refused by smcrd.
chmod 777 "$WORK"; chmod 666 "$conf"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$BIN/smcrctl" -c "$conf" set max_memory=2); rc=$?
expect_eq "unprivileged set exits" "$rc" 1
if grep -q "only root may change the configuration" <<< "$out"; then pass "smcrd refuses an unprivileged reload"; else fail "unprivileged set: $out"; fi
if status | grep -q "of max_memory 1 MiB"; then pass "the running max_memory is unchanged"; else fail "status: $(status)"; fi
out=$("$BIN/smcrctl" -c "$conf" set max_memory=3)
expect_eq "root's set" "$out" "applied"
if status | grep -q "of max_memory 3 MiB"; then pass "root's change is live"; else fail "status: $(status)"; fi

# Malformed requests: the client is dropped, smcrd lives on.
"$PY" - "$SMCR_RUNDIR/smcrd.sock" << 'PY'
import socket, sys
for junk in (b"x", b"\x01\x00\x63\x00" + bytes(268), bytes(5000)):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1]); s.send(junk); s.settimeout(2)
    try:
        assert s.recv(100) == b""
    except ConnectionResetError:
        pass
PY
expect_eq "malformed requests get the connection closed" "$?" 0
if kill -0 "$daemon" && status > /dev/null; then pass "smcrd still serves after malformed requests"; else fail "smcrd died"; fi

# A descriptor whose close() blocks (a TCP socket lingering on unsent data),
# handed to smcrd in a request: smcrd must go on answering.  smcrd is
# stopped until the sender has closed its copy, so that smcrd's close is the
# last, the one that lingers (else it may be the sender's).
version=$(sed -n 's/^#define SMCR_CONTROL_VERSION \([0-9]*\).*/\1/p' "$(dirname "$0")/../../common/control_proto.h")
kill -STOP "$daemon"
PYTHONPATH=$(dirname "$0") "$PY" - "$SMCR_RUNDIR/smcrd.sock" "$version" > "$WORK/linger.out" << 'PY' &
import array, socket, sys, time
from lingering import lingering_socket
listener = socket.create_server(("127.0.0.1", 0))           # never reads, stays
tcp = lingering_socket(socket.create_connection(listener.getsockname()), 30)
ctl = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
ctl.connect(sys.argv[1])
grant = bytearray(272)
grant[0:2] = int(sys.argv[2]).to_bytes(2, "little")         # version
grant[2:4] = (2).to_bytes(2, "little")                       # GRANT: carries no descriptor
ctl.sendmsg([bytes(grant)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [tcp.fileno()]))])
port = tcp.getsockname()[1]
tcp.close()                                                  # smcrd holds the last reference
ctl.close()
print("sent", port, flush=True)
time.sleep(20)
PY
linger=$!
BG_PIDS+=($linger)
wait_for "$WORK/linger.out" sent || fail "the lingering socket was not handed over"
kill -CONT "$daemon"
# smcrd has closed it: the connection leaves ESTABLISHED (for FIN-WAIT-1 behind its unsent data).
port=$(sed -n 's/^sent //p' "$WORK/linger.out")
closed() { [ -z "$(ss -Htn state established "sport = :$1")" ]; }
until_true closed "${port:-0}" ||
	fail "smcrd did not close the lingering socket: $(ss -Htn "sport = :${port:-0}")"
out=$(timeout 10 "$BIN/smcrctl" status 2>&1)
if grep -q "running (pid $daemon)" <<< "$out"; then pass "smcrd answers after being handed a lingering socket"; else fail "smcrd stuck: $out"; fi
kill "$linger"; wait "$linger" 2> /dev/null

# Out of descriptors, smcrd refuses registrations instead of spinning on its
# listener, and serves again once descriptors are free.
cpu() { awk '{print $14 + $15}' "/proc/$daemon/stat"; }
used_fds=$(ls "/proc/$daemon/fd" | wc -l)
hard=$(prlimit --pid "$daemon" --nofile --raw --noheadings | awk '{print $3}')
prlimit --pid "$daemon" --nofile=$((used_fds + 4)):"$hard"
before=$(cpu)
"$PY" - "$SMCR_RUNDIR/smcrd.sock" << 'PY' &
import socket, sys, time
held = []
for _ in range(20):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    held.append(s)
time.sleep(2)
PY
flood=$!
sleep 1.5                       # a window to measure smcrd's CPU time in, not a wait for an event
after=$(cpu)
if [ $((after - before)) -lt 50 ]; then pass "out of descriptors: smcrd idle ($((after - before)) ticks in 1.5 s)"; else fail "smcrd spun: $((after - before)) ticks in 1.5 s"; fi
grep -q "out of descriptors: a process could not register" "$WORK/smcrd.err" &&
	pass "smcrd says why it refused" || fail "no refusal logged"
wait "$flood"
prlimit --pid "$daemon" --nofile="$hard":"$hard"
for _ in $(seq 30); do status > /dev/null && break; sleep 0.1; done
status > /dev/null && pass "smcrd serves again" || fail "smcrd does not answer after the flood"

# smcrd gone: grants are refused, not hung.
kill -9 "$daemon"; wait "$daemon" 2> /dev/null
expect_eq "grant without smcrd" "$("$BIN/grant_client" 1 | head -1)" "refused 1: Transport endpoint is not connected"
finish
