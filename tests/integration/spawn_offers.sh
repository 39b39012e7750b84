#!/bin/bash
# spawn_offers.sh BUILD_DIR - a spawn offers smcrd only the connections
# its new image starts with.  A preloaded server accepts 4 connections
# whose clients then say nothing (each client's buffer is on offer, and
# the server's too where its accept() found the client's Proposal there
# and answered it, which a loaded host makes likelier; the others' wait,
# their buffers not yet made), then:
#  1. runs `true` with posix_spawn: the connections are close-on-exec, so
#     none is handed to it, and smcrd must hold the same buffers on offer
#     as before it (before the fix, the server offered all 4 of its own,
#     each buffer made and charged);
#  2. hands one of them to `cat` with posix_spawn (dup2 onto 0 and 1) and
#     closes its copy: the client's 1 MiB echoes byte-exact over
#     $SMCR_TEST_TRANSPORT; once it closed, its buffers are off offer (one
#     or two fewer) and the other 3 connections' are all that is, and when
#     both ends exit, nothing is.
. "$(dirname "$0")/lib.sh"
PORT=24690
start_smcrd "$PORT" 64
mkfifo "$WORK/go"
# offered: the number of buffers smcrd holds on offer (`smcrctl status`)
offered() { "$BIN/smcrctl" status | sed -n 's/^buffers: *\([0-9]*\) offered.*/\1/p'; }

cat > "$WORK/server.py" <<'EOS'
import os, shutil, socket, sys
lst = socket.socket()
lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lst.bind((sys.argv[1], int(sys.argv[2])))
lst.listen(8)
print("listening", flush=True)
conns = [lst.accept()[0] for _ in range(4)]
print("accepted", flush=True)
open(sys.argv[3]).readline()            # the test counted the offers
pid = os.posix_spawn(shutil.which("true"), ["true"], os.environ)
os.waitpid(pid, 0)
print("spawned true", flush=True)
open(sys.argv[3]).readline()            # the test looked at smcrd
fd = conns[0].fileno()
pid = os.posix_spawn(shutil.which("cat"), ["cat"], os.environ,
                     file_actions=[(os.POSIX_SPAWN_DUP2, fd, 0), (os.POSIX_SPAWN_DUP2, fd, 1)])
conns[0].close()
print("spawned cat", flush=True)
os.waitpid(pid, 0)
open(sys.argv[3]).readline()
EOS
cat > "$WORK/client.py" <<'EOS'
import os, socket, sys, threading
addr, port = sys.argv[1], int(sys.argv[2])
conns = [socket.create_connection((addr, port)) for _ in range(4)]
print("connected", flush=True)
sys.stdin.readline()                    # the server spawned cat
data = os.urandom(1 << 20)
t = threading.Thread(target=conns[0].sendall, args=(data,))
t.start()
got = bytearray()
while len(got) < len(data) and (piece := conns[0].recv(65536)):
    got += piece
t.join()
conns[0].close()
print("echoes the same:", bytes(got) == data, flush=True)
sys.stdin.readline()
EOS

start_bg server smcr "$PY" "$WORK/server.py" "$TEST_ADDR" "$PORT" "$WORK/go"
server=$LAST_PID
wait_for "$WORK/server.out" listening || { fail "the server did not start"; finish; }
exec 3> >(run_mode smcr "$PY" "$WORK/client.py" "$TEST_ADDR" "$PORT" > "$WORK/client.out" \
	2> "$WORK/client.err")
wait_for "$WORK/server.out" accepted || fail "the server did not accept"
wait_for "$WORK/client.out" connected || fail "the client did not connect"  # its offers made
before=$(offered)
expect_between "buffers on offer once accepted: the clients' 4 and up to 4 answers" "$before" 4 8
echo go > "$WORK/go"
until_true grep -qs 'spawned true' "$WORK/server.out" || fail "the server did not spawn true"
expect_eq "buffers on offer after spawning true: as before it" "$(offered)" "$before"
echo go > "$WORK/go"
until_true grep -qs 'spawned cat' "$WORK/server.out" || fail "the server did not spawn cat"
echo go >&3
until_true grep -qs 'echoes' "$WORK/client.out"
expect_eq "the connection handed to cat" "$(tail -n 1 "$WORK/client.out")" "echoes the same: True"
# back to those of the other 3 connections: the 3 clients', and the server's that answered
until_true test "$(offered)" -le $((before - 1)) 2> /dev/null
expect_between "buffers on offer once it closed: the other 3 connections'" "$(offered)" \
	$((before - 2 > 3 ? before - 2 : 3)) $((before - 1))
echo go >&3
echo go > "$WORK/go"
exec 3>&-
stop_bg "$server" -
expect_eq "server exit status" "$?" 0
memory_back "buffer memory once both ends exited"
on_transport "the connection handed to cat" 1 $((1 << 20))
finish
