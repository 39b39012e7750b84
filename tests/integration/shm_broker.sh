#!/bin/bash
# smcrd's shared-memory buffer broker (smcrd/shm_broker.c) through libsmcr's
# client (tests/progs/shm_peer.c): the two ends of a loopback connection, in
# two processes, offer sealed memfds with their wake-up channels; each sees
# what the other writes into its buffer and reads what the other sends on its
# channel; nobody else gets in (a third process, a wrong token, a process's
# own end, look-alike sockets: UDP, another network namespace); bad offers
# (wake-up channels that are no unix stream socket pair among them: an
# eventfd, a pipe, a datagram socket, one connected to a named socket) and offers beyond
# max_memory are refused; grants come back on WITHDRAW and when the offerer
# is SIGKILLed; requests carrying the wrong descriptors are dropped; and
# smcrd holds no more descriptors at the end than at the start.
. "$(dirname "$0")/lib.sh"

export SMCR_RUNDIR=$WORK/run
conf=$WORK/smcr.conf
cp "$(dirname "$0")/../../conf/smcr.conf" "$conf"
"$BIN/smcrctl" -c "$conf" set max_memory=1 "ip_addr_list=127.0.0.1 ::1" > /dev/null

# The broker needs no negotiation: the program goes to an empty cgroup of our
# own, so that this test touches no other connection on the host.
cgroot=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
cgroup=$cgroot/smcr-shm-broker.$$
mkdir "$cgroup" || { echo "FAIL: cannot create $cgroup"; exit 1; }
trap 'cleanup; rmdir "$cgroup"' EXIT

start_bg smcrd plain "$BIN/smcrd" -f -c "$conf" -C "$cgroup"
allow_log 'smcrd refused our buffer for fd [0-9]+: '      # the bad offers below
daemon=$LAST_PID
status() { "$BIN/smcrctl" status; }
for _ in $(seq 50); do status > /dev/null && break; sleep 0.1; done
status > /dev/null || { fail "smcrd did not start: $(cat "$WORK/smcrd.err")"; finish; }

# shm_peer's "ok: X" / "FAILED: X" lines as PASS / FAIL lines.
report() {
	while IFS= read -r line; do
		case $line in
			ok:*) pass "${line#ok: }" ;;
			FAILED:*) fail "${line#FAILED: }" ;;
		esac
	done < "$1"
}

# smcrd's open descriptors, once smcrctl's passing connections are gone:
# waits up to 3 s for the count to come down to $1.
fds() {
	local n
	for _ in $(seq 30); do
		n=$(ls "/proc/$daemon/fd" | wc -l)
		[ "$n" -le "$1" ] && break
		sleep 0.1
	done
	echo "$n"
}
base=$(ls "/proc/$daemon/fd" | wc -l)

buffers_are() { status | grep -q "^buffers: *$1$"; }
memory_is() { status | grep -q "^memory: *$1 MiB"; }

# Requests whose descriptors do not match their type: dropped, nothing kept.
timeout 60 "$BIN/shm_peer" junk > "$WORK/junk.out" 2>&1
expect_eq "shm_peer junk exits" "$?" 0
report "$WORK/junk.out"
expect_eq "smcrd's descriptors after malformed requests" "$(fds "$base")" "$base"

# Offers smcrd must refuse, and one beyond max_memory (1 MiB).
SMCR_LOG=warn timeout 60 "$BIN/shm_peer" bad 2097152 > "$WORK/bad.out" 2> "$WORK/bad.err"
expect_eq "shm_peer bad exits" "$?" 0
report "$WORK/bad.out"
expect_eq "the refused wake-up channels are logged as such" \
	"$(grep -c 'the wake-up channel is not a pair of unix stream sockets' "$WORK/bad.err")" 14
until_true memory_is 0.0 && until_true buffers_are "0 offered, 0 attached" &&
	pass "nothing held after the refused offers" || fail "status: $(status)"
expect_eq "smcrd's descriptors after refused offers" "$(fds "$base")" "$base"

# Two ends, each offering 64 KiB, for IPv4, IPv6 and an IPv6 server with an IPv4 client.
for addr in 127.0.0.1 ::1 mapped; do
	out=$WORK/pair-$addr.out
	SMCR_LOG=warn "$BIN/shm_peer" pair "$addr" 65536 > "$out" 2> "$WORK/pair-$addr.err" &
	pair=$!
	BG_PIDS+=($pair)
	if ! wait_for "$out" "^holding"; then
		fail "pair $addr: no holding: $(cat "$out" "$WORK/pair-$addr.err")"
		stop_bg "$pair" KILL 1
		continue
	fi
	if buffers_are "2 offered, 2 attached" && [ "$(status | grep -cE '^ +[0-9]+ +0 +65536 +shm_peer')" = 2 ]; then
		pass "pair $addr: status shows both buffers attached, 64 KiB charged to each end"
	else
		fail "pair $addr: status: $(status)"
	fi
	kill -USR1 "$pair"
	wait_for "$out" "^withdrawn" || fail "pair $addr: no withdrawn"
	# The processes live on: their grants came back by WITHDRAW, not by exit.
	until_true buffers_are "0 offered, 0 attached" && until_true memory_is 0.0 &&
		pass "pair $addr: WITHDRAW returned both grants" || fail "pair $addr: status: $(status)"
	kill -USR1 "$pair"
	stop_bg "$pair" - 10
	expect_eq "pair $addr: shm_peer exits" "$?" 0
	report "$out"
	expect_eq "pair $addr: smcrd's descriptors" "$(fds "$base")" "$base"
done

# The offerer is SIGKILLed before its peer attached: its grant and its offer go.
out=$WORK/orphan.out
"$BIN/shm_peer" orphan 262144 > "$out" 2>&1 &
peer=$!
BG_PIDS+=($peer)
if wait_for "$out" "^offerer "; then
	offerer=$(sed -n 's/^offerer //p' "$out")
	if buffers_are "1 offered, 0 attached" && status | grep -qE "^ +$offerer +0 +262144 +shm_peer"; then
		pass "the offerer holds 256 KiB and one unattached buffer"
	else
		fail "status: $(status)"
	fi
	# The offerer's control connection, its pidfd (smcrd/pidfd.h) and statistics
	# region (kept: stats_agg.h), its memfd, its channel's two ends and its state.
	expect_eq "smcrd's descriptors with one buffer waiting" "$(fds $((base + 7)))" $((base + 7))
	kill -9 "$offerer"
	until_true buffers_are "0 offered, 0 attached" && until_true memory_is 0.0 &&
		pass "SIGKILL: the offer gone, its grant returned" || fail "status: $(status)"
	kill -USR1 "$peer"
	stop_bg "$peer" - 10
	expect_eq "shm_peer orphan exits" "$?" 0
else
	fail "no offerer: $(cat "$out")"
fi
report "$out"
expect_eq "smcrd's descriptors after the killed offerer" "$(fds "$base")" "$base"

# RELEASE gives back only what was granted, not what an offer holds: a
# process cannot offer buffers beyond max_memory by releasing their grants.
version=$(sed -n 's/^#define SMCR_CONTROL_VERSION \([0-9]*\).*/\1/p' "$(dirname "$0")/../../common/control_proto.h")
"$PY" - "$SMCR_RUNDIR/smcrd.sock" "$version" > "$WORK/release.out" << 'PY' &
import array, fcntl, os, socket, struct, sys, time
MSG = "<HHiQQQII240s"                   # struct smcr_control_msg
version, OFFER, RELEASE = int(sys.argv[2]), 6, 3
ctl = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
ctl.connect(sys.argv[1])
listener = socket.create_server(("127.0.0.1", 0))
client = socket.create_connection(listener.getsockname())
server, _ = listener.accept()
memfd = os.memfd_create("buffer", os.MFD_ALLOW_SEALING)
os.ftruncate(memfd, 65536)
fcntl.fcntl(memfd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
wake_rx, wake_tx = socket.socketpair()
state = os.memfd_create("state", os.MFD_ALLOW_SEALING)
os.ftruncate(state, 4096)
fcntl.fcntl(state, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
ctl.sendmsg([struct.pack(MSG, version, OFFER, 0, 65536, 0, 0, 0, 0, b"")],
            [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [client.fileno(), memfd, wake_rx.fileno(), wake_tx.fileno(), state]))])
result = struct.unpack(MSG, ctl.recv(512))[2]
ctl.send(struct.pack(MSG, version, RELEASE, 0, 65536, 0, 0, 0, 0, b""))
print("offered" if result == 0 else "refused %d" % result, flush=True)
time.sleep(20)
PY
holder=$!
BG_PIDS+=($holder)
if wait_for "$WORK/release.out" offered; then
	until_true buffers_are "1 offered, 0 attached"
	until_true memory_is 0.1 && pass "RELEASE leaves an offer's grant alone (0.1 MiB still in use)" ||
		fail "after RELEASE: $(status)"
	kill "$holder"; wait "$holder" 2> /dev/null
	until_true memory_is 0.0 && pass "its grant returned when the process went" || fail "status: $(status)"
else
	fail "offer: $(cat "$WORK/release.out")"
fi

if kill -0 "$daemon" && status > /dev/null; then pass "smcrd still serves"; else fail "smcrd died"; fi
stop_bg "$daemon" TERM 10
finish
