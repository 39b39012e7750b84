"""Connections that are used before they change hands, for the tests in
which a root acceptor hands connections to workers (handover_uid.sh,
adversarial/state_lock.sh): the client says "hello\\n", the acceptor reads
it and answers "ok\\n", so that the connection has carried bytes both ways
(its CLC exchange is over) before the acceptor passes it on."""
import socket


def accepted(listener):
    """The next connection on listener, read and answered."""
    conn, _ = listener.accept()
    hello = b""
    while not hello.endswith(b"\n"):
        hello += conn.recv(1)
    conn.sendall(b"ok\n")
    return conn


def connected(addr, port):
    """A connection to addr:port, its hello answered."""
    conn = socket.create_connection((addr, port))
    conn.sendall(b"hello\n")
    got = b""
    while len(got) < 3:
        got += conn.recv(3 - len(got))
    assert got == b"ok\n", got
    return conn
