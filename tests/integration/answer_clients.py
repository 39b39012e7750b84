# answer_clients.py ADDR PORT SIZE CONNS PARALLEL [RCVBUF PAUSE] - CONNS
# connections to a server that answers each with SIZE bytes of
# random.Random(7) and ends it, PARALLEL at a time, each reading its answer
# to the end.  With RCVBUF, each asks for that receive buffer (SO_RCVBUF)
# before it connects and leaves its answer unread for PAUSE seconds first.
# Prints "exact N", N being the answers that came whole and byte-exact;
# to stderr, for each other answer, how much came ("differs: N of SIZE
# bytes"), and each error ("after N bytes: ERROR").  For the integration
# tests (lib.sh's $PY runs it, preloaded or not).
import random
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor

addr, port, size, conns, parallel = sys.argv[1], *map(int, sys.argv[2:6])
rcvbuf, pause = (int(sys.argv[6]), float(sys.argv[7])) if len(sys.argv) > 7 else (0, 0)
want = random.Random(7).randbytes(size)


def one(_):
    got = bytearray()
    try:
        with socket.socket() as s:
            if rcvbuf:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            s.connect((addr, port))
            time.sleep(pause)
            while chunk := s.recv(65536):
                got += chunk
    except OSError as e:
        print("after %d bytes: %s" % (len(got), e), file=sys.stderr, flush=True)
    return len(got), bytes(got) == want


with ThreadPoolExecutor(parallel) as pool:
    results = list(pool.map(one, range(conns)))
print("exact %d" % sum(same for _, same in results), flush=True)
for n, same in results:
    if not same:
        print("differs: %d of %d bytes" % (n, size), file=sys.stderr, flush=True)
