#!/bin/bash
# exec_close.sh BUILD_DIR - a connection whose holder execs a program that
# closes it and lives on: `socat TCP-LISTEN:P,fork EXEC:...,nofork` forks
# per connection and the child execs bash in its place with the connection
# on 0 and 1; the script answers one line, closes both descriptors 2 s
# later (after smcrd has stopped looking at the old image's offers, which
# it does for half a second after that image's registration ends), says
# so, and waits.  Once the client closed too (and sleeps), smcrd must
# count no buffer memory in use while both still run: the exec'd image, which closed
# the last descriptors anywhere, ended the connection.  Before the old
# image handed its hold to the new one at the exec, the connection stayed
# held (buffers and all) until the process exited.
. "$(dirname "$0")/lib.sh"
need socat
PORT=19520
start_smcrd $PORT 64

# bash waits with its read builtin on a FIFO nobody writes, so that no
# process is forked or exits (each would make smcrd look for sockets that
# are gone, and find this one once it closed) until the check is done.
mkfifo "$WORK/never"
cat > "$WORK/answer.sh" <<'EOS'
IFS= read -r line
printf 'got %s\n' "$line"
read -r -t 2 _ <> "$1/never"
exec 0<&- 1>&-
echo $$ > "$1/closed"
read -r -t 60 _ <> "$1/never"
EOS
start_bg listener smcr socat "TCP-LISTEN:$PORT,reuseaddr,fork,bind=$TEST_ADDR" \
	"EXEC:/bin/bash $WORK/answer.sh $WORK,nofork"
listener=$LAST_PID
wait_listen "$PORT" "$listener" || finish

# The client stays up after its close, so that no exit of a registered
# process makes smcrd look for sockets that are gone.
cat > "$WORK/client.py" <<'EOS'
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])))
c.sendall(b"hello\n")
print(c.makefile().readline().strip(), flush=True)
c.close()
print("closed", flush=True)
time.sleep(60)
EOS
start_bg client smcr "$PY" "$WORK/client.py" "$TEST_ADDR" "$PORT"
client=$LAST_PID
for _ in $(seq 300); do [ -s "$WORK/closed" ] && grep -q closed "$WORK/client.out" && break; sleep 0.1; done
expect_eq "the answer" "$(head -n 1 "$WORK/client.out")" "got hello"
sh_pid=$(cat "$WORK/closed" 2> /dev/null)
[ -n "$sh_pid" ] || fail "the exec'd script never said it closed the connection"
on_transport "exec'd answer" 1 9
memory_back "buffer memory in use once the exec'd image closed it"
expect_eq "buffers offered at smcrd" \
	"$("$BIN/smcrctl" status | sed -n 's/^buffers: *\([0-9]*\) offered.*/\1/p')" 0
for pid in "$sh_pid" "$client"; do
	kill -0 "$pid" 2> /dev/null && pass "pid $pid still runs" ||
		fail "pid $pid is gone: its exit may have freed the buffers"
done
kill "$sh_pid" 2> /dev/null
finish
