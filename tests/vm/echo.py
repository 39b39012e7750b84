#!/usr/bin/python3
"""echo.py server|client ADDR PORT FILE - one TCP exchange between two guests.

Owns the two-guest data check of tests/vm: the server accepts one
connection on ADDR:PORT (saying "listening" when it does), reads until EOF and sends back what it read; the
client connects to ADDR:PORT, sends FILE, half-closes and reads the echo
until EOF.  Each side exits 1 unless what it received is FILE, byte for
byte.  Plain socket calls: run under LD_PRELOAD=libsmcr.so to test that.
Gives up after 120 s.
"""
import socket
import sys


def recv_all(sock):
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def main():
    role, addr, port, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with open(path, "rb") as f:
        want = f.read()
    if role == "server":
        with socket.create_server((addr, port)) as lsock:
            print(f"echo.py server: listening on {addr}:{port}", flush=True)
            lsock.settimeout(120)
            sock, peer = lsock.accept()
    else:
        sock = socket.create_connection((addr, port), timeout=120)
        peer = (addr, port)
    with sock:
        sock.settimeout(120)
        if role == "server":
            got = recv_all(sock)
            sock.sendall(got)
        else:
            sock.sendall(want)
            sock.shutdown(socket.SHUT_WR)
            got = recv_all(sock)
    same = got == want
    print(f"echo.py {role}: {len(got)} bytes from {peer[0]}, {'equal to' if same else 'DIFFERENT from'} {path}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
