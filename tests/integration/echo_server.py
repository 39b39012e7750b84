# echo_server.py ADDR PORT - a threaded TCP echo server for the integration
# tests: one thread per connection sends back whatever it receives, until
# the client's end of stream.  Plain socket calls (lib.sh's start_bg runs it
# under the preload).
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


s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(64)
while True:
    c, _ = s.accept()
    threading.Thread(target=echo, args=(c,), daemon=True).start()
