#!/bin/bash
# used_then_forked.sh BUILD_DIR - a connection used, then forked, then used
# by the child and again by the parent: both get every byte, in order, as
# over TCP.  A preloaded python client says hello to a preloaded socat
# echo server and reads the answer, forks; the child echoes 1 MiB of
# random bytes and exits; then the parent echoes 64 KiB more.  Over shared
# memory the child maps the same buffers and all stays on shm.  Over RDMA
# the child cannot use its parent's queue pair and memory (smc_rdma.c):
# it was reset (ECONNRESET); now it leaves for TCP (docs/ARCHITECTURE.md,
# "Leaving for TCP mid-stream"): LEAVE on the stream without a CDC, which
# socat finds there, and both ends, and the parent with the child, go on
# over TCP (left: 2; the child's reason NOSMCDEV, socat's PEERLEFT).
. "$(dirname "$0")/lib.sh"
need socat
PORT=24710
start_smcrd "$PORT" 64

cp "$SRC/tests/integration/used_conns.py" "$WORK/"
cat > "$WORK/client.py" <<'EOS'
import os, sys
import used_conns                # from tests/integration, beside this script

def echo(s, n, who):
    same = used_conns.echoes(s, n)
    print("%s: echo %s" % (who, "exact" if same else "DIFFERS"), flush=True)
    return same

s = used_conns.echoed_hello(sys.argv[1], int(sys.argv[2]))
pid = os.fork()
if pid == 0:
    os._exit(0 if echo(s, 1 << 20, "child") else 1)
_, status = os.waitpid(pid, 0)
ok = echo(s, 65536, "parent")
sys.exit(0 if ok and status == 0 else 1)
EOS

start_bg server smcr socat -b 65536 "TCP-LISTEN:$PORT,reuseaddr,bind=$TEST_ADDR" EXEC:cat
SERVER=$LAST_PID
wait_listen "$PORT" "$SERVER"
run_mode smcr timeout 60 "$PY" "$WORK/client.py" "$TEST_ADDR" "$PORT" > "$WORK/client.out" 2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
expect_eq "echoes" "$(tr '\n' ' ' < "$WORK/client.out")" "child: echo exact parent: echo exact "
expect_eq "connections on $TEST_TRANSPORT" "$(transport_counter clients) $(transport_counter servers)" "1 1"
if [ "$TEST_TRANSPORT" = rdma ]; then
	expect_eq "ends that left for TCP" "$(transport_counter left)" 2
	expect_eq "the child's reason" \
		"$(grep -c 'goes on over TCP from here: NOSMCDEV' "$WORK/client.err")" 1
	expect_eq "socat's reason" "$(grep -c 'goes on over TCP from here: PEERLEFT' "$WORK/server.err")" 1
else
	expect_eq "ends that left for TCP" "$(transport_counter left)" 0
fi
# socat exits after its one connection: awaited, as a SIGTERM during ASan's
# leak check at its exit would read as a sanitizer report
stop_bg "$SERVER" - 30
finish
