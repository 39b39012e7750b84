"""A server that starts programs with Python's subprocess, as many do: for
each connection it reads a request line, then either runs `true` and
answers itself ("answer": the child closes every descriptor but 0-2
before its exec, in the parent's memory, since Python forks with vfork),
or hands the connection to `cat` as its stdin and stdout and closes its
own copy ("handoff": cat echoes what follows the line).

usage: subprocess_server.py ADDR PORT MODE CONNECTIONS"""
import socket
import subprocess
import sys

addr, port, mode, conns = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((addr, port))
listener.listen(8)
print("listening", flush=True)
for _ in range(conns):
    conn, _ = listener.accept()
    line = b""
    while not line.endswith(b"\n"):
        byte = conn.recv(1)
        if not byte:
            break
        line += byte
    if mode == "answer":
        subprocess.run(["true"], check=True)
        conn.sendall(b"answered after a subprocess: " + line)
        conn.close()
    else:
        child = subprocess.Popen(["cat"], stdin=conn.fileno(), stdout=conn.fileno())
        conn.close()
        child.wait()
