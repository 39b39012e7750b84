# hold_conn.py ADDR PORT [NAME] - one loopback TCP connection between two
# processes, held open: the parent listens on ADDR:PORT, forks a child that
# connects, and the two exchange a line each way (so that the handshake and
# any CLC exchange are over).  The parent then prints "held PARENT CHILD"
# (their pids) and both wait until the parent is killed; the child ends at
# the end of its stream.  With NAME (a Python bytes literal, such as
# 'b"\x1b[2J"'), both first rename themselves to it (prctl PR_SET_NAME: what
# /proc/PID/comm and so smcrd see).  With SMCR_TEST_AGAIN_PORT in the
# environment, the parent listens on that port of ADDR too (a port outside
# smcrd's port_range_list: plain TCP), and SIGUSR1 makes either process
# connect there twice and print "again PID": libsmcr learns at the first
# connection that smcrd went, and registers with the one that started
# since at the second.  With SMCR_TEST_RCVBUF="LISTENER CLIENT" (bytes), the
# listener's SO_RCVBUF is set to LISTENER before it listens and the child's
# socket's to CLIENT before it connects (0: left alone), as an application
# asks for buffer sizes.  For the tests that need registered processes
# holding connections (lib.sh's $PY runs it, preloaded).
import ast
import ctypes
import os
import signal
import socket
import sys

PR_SET_NAME = 15

addr, port = sys.argv[1], int(sys.argv[2])
if len(sys.argv) > 3:
    name = ast.literal_eval(sys.argv[3])
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0):
        sys.exit(f"prctl: {os.strerror(ctypes.get_errno())}")


rcvbuf = [int(n) for n in os.environ.get("SMCR_TEST_RCVBUF", "0 0").split()]


def tcp_socket(size):
    """A TCP socket for addr, with SO_RCVBUF set to size unless 0."""
    s = socket.socket(socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM)[0][0])
    if size:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, size)
    return s


def again(signum, frame):
    for _ in range(2):
        socket.create_connection((addr, again_port)).close()
    print("again", os.getpid(), flush=True)


listener = tcp_socket(rcvbuf[0])
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((addr, port))
listener.listen()
if "SMCR_TEST_AGAIN_PORT" in os.environ:
    again_port = int(os.environ["SMCR_TEST_AGAIN_PORT"])
    again_listener = socket.create_server((addr, again_port))
    signal.signal(signal.SIGUSR1, again)
child = os.fork()
if child == 0:
    listener.close()
    c = tcp_socket(rcvbuf[1])
    c.connect((addr, port))
    c.sendall(b"hello\n")
    while c.recv(4096):         # the parent's line, then the end when it dies
        pass
    os._exit(0)
s, _ = listener.accept()
got = b""
while not got.endswith(b"\n"):
    got += s.recv(4096)
s.sendall(b"hello\n")
print("held", os.getpid(), child, flush=True)
while True:                     # SIGUSR1 handled: wait on
    signal.pause()
