#!/usr/bin/python3
"""h2delay.py - an HTTP/2 server over cleartext (Python's h2, Debian's
python3-h2) that answers each request DELAY seconds after its HEADERS
arrived, with 200 and "ok", and logs each arrival's time (time.time())
to LOG, one a line: the server's own view of a client's pacing and
round trips.  Several connections, each stream on its own schedule.

    h2delay.py PORT DELAY LOG READY

READY gets the port once it listens.

Until killed.
"""
import heapq
import selectors
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions

port, delay = int(sys.argv[1]), float(sys.argv[2])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(16)
log = open(sys.argv[3], "a", buffering=1)
with open(sys.argv[4], "w") as ready:
    ready.write("%d\n" % port)
listener.setblocking(False)
sel = selectors.DefaultSelector()
sel.register(listener, selectors.EVENT_READ)
conns = {}
due = []  # (time, sequence, socket, stream)
sequence = 0


def flush(sock):
    conn = conns.get(sock)
    if conn is not None:
        sock.setblocking(True)
        sock.sendall(conn.data_to_send())
        sock.setblocking(False)


def close(sock):
    sel.unregister(sock)
    conns.pop(sock, None)
    sock.close()


while True:
    timeout = max(0.0, due[0][0] - time.time()) if due else None
    for key, _ in sel.select(timeout):
        if key.fileobj is listener:
            sock, _ = listener.accept()
            sock.setblocking(False)
            conn = h2.connection.H2Connection(
                h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
            conn.initiate_connection()
            conns[sock] = conn
            sel.register(sock, selectors.EVENT_READ)
            flush(sock)
            continue
        sock = key.fileobj
        try:
            data = sock.recv(65536)
        except ConnectionError:
            data = b""
        if not data:
            close(sock)
            continue
        try:
            events = conns[sock].receive_data(data)
        except h2.exceptions.ProtocolError:
            close(sock)
            continue
        for ev in events:
            if isinstance(ev, h2.events.RequestReceived):
                now = time.time()
                log.write("%.6f\n" % now)
                sequence += 1
                heapq.heappush(due, (now + delay, sequence, sock, ev.stream_id))
        flush(sock)
    while due and due[0][0] <= time.time():
        _, _, sock, stream = heapq.heappop(due)
        conn = conns.get(sock)
        if conn is None:
            continue
        try:
            conn.send_headers(stream, [(":status", "200"), ("content-length", "3")])
            conn.send_data(stream, b"ok\n", end_stream=True)
            flush(sock)
        except (h2.exceptions.ProtocolError, h2.exceptions.StreamClosedError, OSError):
            pass
