#!/bin/bash
# late_proposal.sh BUILD_DIR - a client's Proposal that a preloaded server
# leaves unread when it ends the connection without reading: by close(),
# then by ending its process with os._exit.  The kernel resets a TCP
# connection closed with bytes unread, and drops what the application
# wrote that the peer has not yet taken: a reset TCP would not give, so
# libsmcr reads the Proposal off first.  Two ways to leave one unread:
#   late: the Proposal comes after the server declined for want of it
#     (NOPROPOSAL: a server that writes first waits 1 s at most).  The
#     server writes its answer and does other work while the Proposal
#     comes; the client is silent_peer in its "late" mode: on the Decline
#     it sends its Proposal, as a client's library on a loaded host would,
#     then reads the answer to its end, which it must read whole, then the
#     end.
#   unanswered: where RDMA may carry the connection (shm = 0 here),
#     accept() answers nothing, leaving the Proposal to the first call on
#     the connection, in whichever process makes it (a fork server's
#     child); this server makes none.  The client is silent_peer in its
#     "prompt" mode: it sends its Proposal as it connects, as libsmcr does.
#     The server's libsmcr declines at the last close or the end (a Decline
#     costs less than the link an answer would build), and the client must
#     read that Decline, then the end; a connection that carried nothing
#     counts no fallback.
# The server ends once the Proposal is in its socket's queue, as
# /proc/net/tcp shows (it asks libsmcr nothing).
. "$(dirname "$0")/lib.sh"
PORT=24780
SIZE=65536
start_smcrd "$PORT-$((PORT + 3))" 64

cat > "$WORK/server.py" <<'EOS'
import os, socket, sys, time

how, host, port, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lsock = socket.create_server((host, port))
print("listening", flush=True)
conn, _ = lsock.accept()
if size:
    conn.sendall(b"a" * size)   # no Proposal yet: declined, the answer goes on TCP

def unread(port):
    # bytes in the kernel's queue of our connection (/proc/net/tcp: no libsmcr call)
    for line in open("/proc/net/tcp"):
        f = line.split()
        if f[1].endswith(":%04X" % port) and f[3] == "01":
            return int(f[4].split(":")[1], 16)
    return 0

deadline = time.monotonic() + 10    # other work, while the late Proposal comes
while not unread(port) and time.monotonic() < deadline:
    time.sleep(0.05)
if how == "exit":
    os._exit(0)                 # the kernel closes the socket
conn.close()
EOS

# ends HOW PORT CLIENT SIZE WANT: one server that ends its connection by HOW
# (close or exit) after writing SIZE bytes, one silent_peer client in mode
# CLIENT, which must read WANT
ends() {
	local how=$1 port=$2 mode=$3 size=$4 want=$5 srv cli
	start_bg "server-$how-$mode" smcr "$PY" "$WORK/server.py" "$how" "$TEST_ADDR" "$port" "$size"
	srv=$LAST_PID
	wait_listen "$port" "$srv" || return
	start_bg "client-$how-$mode" plain "$BIN/silent_peer" "$TEST_ADDR" "$port" 1 \
		$((size > 0 ? size : 1)) "$mode"
	cli=$LAST_PID
	stop_bg "$srv" - 15             # it ends by itself, about 3 s on at most
	until_true grep -q done "$WORK/client-$how-$mode.out"
	expect_eq "server that ends by $how, $mode client: what the client read" \
		"$(grep '^conn [0-9]' "$WORK/client-$how-$mode.out")" "$want"
	stop_bg "$cli"
}
late="conn 0: decline 0x03000500 then $SIZE bytes, end"
ends close "$PORT" late "$SIZE" "$late"
ends exit $((PORT + 1)) late "$SIZE" "$late"
"$BIN/smcrctl" -c "$CONF" set shm=0 > /dev/null || fail "smcrctl set shm=0 failed"
unanswered="conn 0: decline 0x03000500 then , end"
ends close $((PORT + 2)) prompt 0 "$unanswered"
ends exit $((PORT + 3)) prompt 0 "$unanswered"
expect_eq "connections declined for want of a Proposal (the late ones)" "$(fallback_count NOPROPOSAL)" 2
finish
