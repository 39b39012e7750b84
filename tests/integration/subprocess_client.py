"""A client that says nothing on a new connection until its server has
handed the connection to another program (subprocess_server.py's early
mode), so that the server's libsmcr cannot have read its Proposal by then:
its connect does not block (libsmcr sends the Proposal at the next call on
the socket), and it waits for a line on the FIFO HANDED first.  Then it
sends PAYLOAD (its first byte, then the rest from a thread, so that an
echo cannot block it) and writes what comes back to stdout.

usage: subprocess_client.py ADDR PORT HANDED PAYLOAD CONNECTIONS
(writes each connection's answer to stdout in turn; they are compared
whole)"""
import errno
import socket
import sys
import threading


def one(addr, port, handed, data):
    conn = socket.socket()
    conn.setblocking(False)
    rc = conn.connect_ex((addr, port))
    if rc not in (0, errno.EINPROGRESS):
        sys.exit("connect: " + errno.errorcode.get(rc, str(rc)))
    if handed.readline() != "handed\n":
        sys.exit("the server said nothing on the FIFO")
    conn.setblocking(True)
    # The first call alone: a second thread's call racing it while it
    # sends the Proposal went on plain TCP (a libsmcr bug of its own).
    conn.sendall(data[:1])

    def send():
        conn.sendall(data[1:])
        conn.shutdown(socket.SHUT_WR)

    sender = threading.Thread(target=send)
    sender.start()
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        sys.stdout.buffer.write(chunk)
    sender.join()
    conn.close()


def main():
    addr, port, fifo, payload, conns = sys.argv[1:6]
    with open(payload, "rb") as f:
        data = f.read()
    with open(fifo) as handed:
        for _ in range(int(conns)):
            one(addr, int(port), handed, data)


main()
