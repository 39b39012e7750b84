# lingering.py - a TCP socket whose close() lingers, for the tests that hand
# one to smcrd (control.sh, adversarial/closer_wedge.sh: PYTHONPATH holds
# this folder).
import socket
import struct


def lingering_socket(connected, seconds):
    """connected: a TCP socket whose peer never reads.  Fills its send
    buffer and sets SO_LINGER {1, seconds}: its last close() then waits up
    to that long for data its peer's shut window never lets through."""
    connected.setblocking(False)
    try:
        while True:
            connected.send(b"x" * 65536)
    except BlockingIOError:
        pass
    connected.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, seconds))
    return connected
