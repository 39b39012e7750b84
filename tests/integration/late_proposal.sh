#!/bin/bash
# late_proposal.sh BUILD_DIR - a client whose Proposal comes after the
# server declined for want of it (NOPROPOSAL: a server that writes first
# waits 1 s at most), against a preloaded server that writes its answer,
# does other work while the Proposal comes, and then ends the connection
# without reading: by close(), then by ending its process with os._exit.
# The client is silent_peer in its "late" mode: on the Decline it sends
# its Proposal, as a client's library on a loaded host would, then reads
# the answer to its end.  The server ends once the Proposal is in its
# socket's queue, as /proc/net/tcp shows.  Over TCP nothing is left unread at the server
# and the client reads the end of the stream.  A late Proposal still
# unread when the server's socket closes would have the kernel reset the
# connection (unread data), so libsmcr reads it off first: the client must
# read the whole answer, then the end, not a reset.
. "$(dirname "$0")/lib.sh"
PORT=24780
SIZE=65536
start_smcrd "$PORT-$((PORT + 1))" 64

cat > "$WORK/server.py" <<'EOS'
import os, socket, sys, time

how, host, port, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lsock = socket.create_server((host, port))
print("listening", flush=True)
conn, _ = lsock.accept()
conn.sendall(b"a" * size)       # no Proposal yet: declined, the answer goes on TCP

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

# ends HOW PORT: one server that ends its connection by HOW, one late client
ends() {
	local how=$1 port=$2 srv cli
	start_bg "server-$how" smcr "$PY" "$WORK/server.py" "$how" "$TEST_ADDR" "$port" "$SIZE"
	srv=$LAST_PID
	wait_listen "$port" "$srv" || return
	start_bg "client-$how" plain "$BIN/silent_peer" "$TEST_ADDR" "$port" 1 "$SIZE" late
	cli=$LAST_PID
	stop_bg "$srv" - 15             # it ends by itself, about 3 s on
	until_true grep -q done "$WORK/client-$how.out"
	expect_eq "server that ends by $how: what the late client read" \
		"$(grep '^conn [0-9]' "$WORK/client-$how.out")" \
		"conn 0: decline 0x03000500 then $SIZE bytes, end"
	stop_bg "$cli"
}
ends close "$PORT"
ends exit $((PORT + 1))
expect_eq "connections declined for want of a Proposal" "$(fallback_count NOPROPOSAL)" 2
finish
