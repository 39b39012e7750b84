"""A server that starts programs with Python's subprocess or posix_spawn,
as many do.  For each connection, by MODE:
  answer:  reads a request line, runs `true`, and answers itself (the
           child closes every descriptor but 0-2 before its exec, in the
           parent's memory, since Python forks with vfork);
  handoff: reads a request line, then hands the connection to `cat` as its
           stdin and stdout (subprocess) and closes its own copy: cat
           echoes what follows the line;
  early:   hands the connection to `cat` the same way before reading
           anything, so before libsmcr has read the client's Proposal
           (subprocess_client.py holds it back until told, by a line on
           the FIFO given as HANDED);
  spawn:   reads a request line, then hands the connection to `cat` with
           posix_spawn (dup2 file actions onto 0 and 1) and closes its own
           copy at once, before cat's image has started;
  system:  puts the connection on 0 and 1 and runs `cat` with os.system
           (the C library's system(), which spawns `sh -c cat` itself)
           before reading anything, as early does;
  popen:   the same with the C library's popen() (through ctypes), whose
           shell puts the connection on cat's 0 and 1 itself, and closes
           its own copy while cat runs.

usage: subprocess_server.py ADDR PORT MODE CONNECTIONS [HANDED]"""
import ctypes
import os
import shutil
import socket
import subprocess
import sys


def read_line(conn):
    line = b""
    while not line.endswith(b"\n"):
        byte = conn.recv(1)
        if not byte:
            break
        line += byte
    return line


def answer(conn):
    line = read_line(conn)
    subprocess.run(["true"], check=True)
    conn.sendall(b"answered after a subprocess: " + line)
    conn.close()


def hand_to_cat(conn):
    child = subprocess.Popen(["cat"], stdin=conn.fileno(), stdout=conn.fileno())
    conn.close()
    return child.wait()


def handoff(conn):
    read_line(conn)
    hand_to_cat(conn)


def early(conn, handed):
    child = subprocess.Popen(["cat"], stdin=conn.fileno(), stdout=conn.fileno())
    conn.close()
    handed.write("handed\n")
    handed.flush()
    child.wait()


def system(conn, handed):
    saved = [os.dup(0), os.dup(1)]
    os.dup2(conn.fileno(), 0)
    os.dup2(conn.fileno(), 1)
    conn.close()
    handed.write("handed\n")
    handed.flush()
    os.system("cat")
    for fd, copy in enumerate(saved):
        os.dup2(copy, fd)
        os.close(copy)


def popen(conn, handed):
    libc = ctypes.CDLL(None)
    libc.popen.restype = ctypes.c_void_p
    libc.popen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.pclose.argtypes = [ctypes.c_void_p]
    fd = conn.fileno()
    os.set_inheritable(fd, True)
    handed.write("handed\n")
    handed.flush()
    stream = libc.popen(f"cat <&{fd} >&{fd}".encode(), b"r")
    conn.close()
    libc.pclose(stream)


def spawn(conn):
    read_line(conn)
    fd = conn.fileno()
    pid = os.posix_spawn(shutil.which("cat"), ["cat"], os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, fd, 0),
                                       (os.POSIX_SPAWN_DUP2, fd, 1)])
    conn.close()
    os.waitpid(pid, 0)


def main():
    addr, port, mode, conns = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((addr, port))
    listener.listen(8)
    print("listening", flush=True)
    handed = open(sys.argv[5], "w") if mode in ("early", "system", "popen") else None
    serve = {"answer": answer, "handoff": handoff, "spawn": spawn,
             "early": lambda conn: early(conn, handed),
             "system": lambda conn: system(conn, handed),
             "popen": lambda conn: popen(conn, handed)}[mode]
    for _ in range(conns):
        conn, _ = listener.accept()
        serve(conn)


main()
