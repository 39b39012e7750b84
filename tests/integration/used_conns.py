"""Connections that are used before they change hands, for the tests in
which a root acceptor hands connections to workers (handover_uid.sh,
adversarial/state_lock.sh): the client says "hello\\n", the acceptor reads
it and answers "ok\\n", so that the connection has carried bytes both ways
(its CLC exchange is over) before the acceptor passes it on.  Later the
acceptor says "go\n" on a connection it kept and echoes what follows.
Against an echo server (fork_used.sh, used_then_forked.sh) the hello
comes back as it went (echoed_hello)."""
import os
import socket
import threading


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


def echoed_hello(addr, port):
    """A connection to an echo server at addr:port that sent our hello back."""
    conn = socket.create_connection((addr, port))
    conn.sendall(b"hello\n")
    got = b""
    while len(got) < 6 and (piece := conn.recv(6 - len(got))):
        got += piece
    assert got == b"hello\n", got
    return conn


def echo_after_go(conn, size):
    """The acceptor: says "go\n", then echoes size bytes (fewer if they end)."""
    conn.sendall(b"go\n")
    left = size
    while left and (piece := conn.recv(65536)):
        conn.sendall(piece)
        left -= len(piece)


def echoes(conn, size):
    """The client: whether size random bytes sent on conn came back as sent."""
    data = os.urandom(size)
    sender = threading.Thread(target=conn.sendall, args=(data,))
    sender.start()
    echo = bytearray()
    while len(echo) < size and (piece := conn.recv(65536)):
        echo += piece
    sender.join()
    return bytes(echo) == data


def echoes_after_go(conn, size):
    """The client: whether "go\n" came, then the echo (echoes)."""
    got = b""
    while len(got) < 3 and (piece := conn.recv(3 - len(got))):
        got += piece
    return got == b"go\n" and echoes(conn, size)
