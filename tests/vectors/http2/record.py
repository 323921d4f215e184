#!/usr/bin/python3
"""record.py - record an HTTP/2 exchange as a test vector for
tests/check_h2walk.c and the seeds of tests/fuzz/corpus/http2/.

    record.py OUT LISTEN_PORT SERVER_PORT

A proxy on 127.0.0.1:LISTEN_PORT that passes one connection to
127.0.0.1:SERVER_PORT and writes, in the order they were read, every
piece each side sent: a byte 'C' (the client's) or 'S' (the server's), a
4-byte big-endian length, the bytes.  The pieces are the proxy's reads,
which for these clients and servers on loopback are their writes.  It
exits when both sides have closed.
"""
import socket
import struct
import sys
import threading

out, listen_port, server_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lock = threading.Lock()
pieces = []

listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", listen_port))
listener.listen(1)
listener.settimeout(20)
client, _ = listener.accept()
server = socket.create_connection(("127.0.0.1", server_port))


def pump(src, dst, tag):
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        if not data:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            return
        with lock:
            pieces.append((tag, data))
            dst.sendall(data)


threads = [threading.Thread(target=pump, args=(client, server, b"C")),
           threading.Thread(target=pump, args=(server, client, b"S"))]
for t in threads:
    t.start()
for t in threads:
    t.join(30)
with open(out, "wb") as f:
    for tag, data in pieces:
        f.write(tag + struct.pack(">I", len(data)) + data)
