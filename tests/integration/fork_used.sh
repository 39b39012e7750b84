#!/bin/bash
# fork_used.sh BUILD_DIR - a forked child cannot stall its parent through
# the descriptors libsmcr keeps for itself.  A preloaded client uses its
# connection (a hello, answered), then forks; the child, as a hostile or
# compromised child would, takes every eventfd it finds among its
# descriptors, makes it blocking (the file status flags are shared with
# the parent's copy) and fills its counter, then exits.  The parent then
# echoes 1 MiB through a preloaded socat, byte-exact, over
# $SMCR_TEST_TRANSPORT.  The RDMA transport wakes its waiters through
# eventfds of the process's own: a child holding them could make every
# wake-up of the parent's block for ever; the child must find none (a
# forked child closes the parent's).
. "$(dirname "$0")/lib.sh"
need socat
PORT=24695
start_smcrd "$PORT" 64

cp "$SRC/tests/integration/used_conns.py" "$WORK/"
cat > "$WORK/client.py" <<'EOS'
import fcntl, os, sys
import used_conns                # from tests/integration, beside this script
s = used_conns.echoed_hello(sys.argv[1], int(sys.argv[2]))
pid = os.fork()
if pid == 0:
    found = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") != "anon_inode:[eventfd]":
                continue
            fd = int(name)
            fcntl.fcntl(fd, fcntl.F_SETFL, 0)
            os.write(fd, (0xfffffffffffffffe).to_bytes(8, "little"))
            found += 1
        except OSError:
            pass
    print("eventfds the child found:", found, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("echoes the same:", used_conns.echoes(s, 1 << 20), flush=True)
EOS

start_bg server smcr socat "TCP-LISTEN:$PORT,reuseaddr,bind=$TEST_ADDR" EXEC:cat
wait_listen "$PORT" "$LAST_PID" || finish
run_mode smcr timeout 60 "$PY" "$WORK/client.py" "$TEST_ADDR" "$PORT" > "$WORK/client.out" \
	2> "$WORK/client.err"
expect_eq "client exit status" "$?" 0
expect_eq "eventfds the child found" "$(sed -n 's/^eventfds the child found: //p' "$WORK/client.out")" 0
expect_eq "the parent's echo after the child" "$(sed -n 's/^echoes the same: //p' "$WORK/client.out")" True
on_transport "the connection" 1 $((1 << 20))
finish
