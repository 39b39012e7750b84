# echo_clients.py ADDR PORT CONNS PARALLEL BYTES - CONNS connections to an
# echo server, PARALLEL at a time, each sending BYTES of random data,
# half-closing and reading the echo to its end; prints "echoes the same: N",
# N being those whose echo was byte-exact.  For the integration tests
# (lib.sh's $PY runs it, preloaded or not).
import os
import socket
import sys
from concurrent.futures import ThreadPoolExecutor

addr, port, conns, parallel, size = sys.argv[1], *map(int, sys.argv[2:6])


def echo(_):
    data = os.urandom(size)
    with socket.create_connection((addr, port)) as c:
        c.sendall(data)
        c.shutdown(socket.SHUT_WR)
        got = bytearray()
        while (piece := c.recv(65536)):
            got += piece
    return got == data


with ThreadPoolExecutor(parallel) as pool:
    print("echoes the same:", sum(pool.map(echo, range(conns))))
