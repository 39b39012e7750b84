# echo_server.py ADDR PORT [pass] - a threaded TCP echo server for the
# integration tests: one thread per connection sends back whatever it
# receives, until the client's end of stream.  With "pass", the process
# that accepts echoes nothing: it hands each connection, before any I/O on
# it, to a worker process over a unix socket (SCM_RIGHTS) and closes its
# own copy, and the worker echoes.  Plain socket calls (lib.sh's start_bg
# runs it under the preload).
import os
import socket
import sys
import threading


def echo(c):
    while True:
        d = c.recv(65536)
        if not d:
            break
        c.sendall(d)
    c.close()


def serve(accept):
    while True:
        c = accept()
        threading.Thread(target=echo, args=(c,), daemon=True).start()


def worker(unix):
    def accept():
        _, fds, _, _ = socket.recv_fds(unix, 1, 1)
        if not fds:
            os._exit(0)         # the accepting process is gone
        return socket.socket(fileno=fds[0])
    serve(accept)


s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(64)
if sys.argv[3:] == ["pass"]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.fork() == 0:
        s.close()
        ours.close()
        worker(theirs)
    theirs.close()
    while True:
        c, _ = s.accept()
        socket.send_fds(ours, [b"c"], [c.fileno()])
        c.close()
serve(lambda: s.accept()[0])
