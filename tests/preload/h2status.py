#!/usr/bin/python3
"""h2status.py - an HTTP/2 server over cleartext (Python's h2, Debian's
python3-h2) that answers the first FIRST requests with STATUS and
"Retry-After: 2", the rest with 200 and "ok" at once, and logs each
request's arrival time (time.time()) to LOG, one a line: the server's own
view of how long a client waited after being told to.

    h2status.py PORT STATUS FIRST LOG READY

READY gets the port once it listens.  Until killed.
"""
import selectors
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions

port, status, first = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(16)
log = open(sys.argv[4], "a", buffering=1)
with open(sys.argv[5], "w") as ready:
    ready.write("%d\n" % port)
sel = selectors.DefaultSelector()
sel.register(listener, selectors.EVENT_READ)
conns = {}
answered = 0

while True:
    for key, _ in sel.select():
        if key.fileobj is listener:
            sock, _ = listener.accept()
            conn = h2.connection.H2Connection(
                h2.config.H2Configuration(client_side=False,
                                          header_encoding="utf-8"))
            conn.initiate_connection()
            conns[sock] = conn
            sel.register(sock, selectors.EVENT_READ)
            sock.sendall(conn.data_to_send())
            continue
        sock = key.fileobj
        try:
            data = sock.recv(65536)
        except ConnectionError:
            data = b""
        conn = conns.get(sock)
        try:
            events = conn.receive_data(data) if data else None
        except h2.exceptions.ProtocolError:
            events = None
        if events is None:
            sel.unregister(sock)
            conns.pop(sock, None)
            sock.close()
            continue
        for ev in events:
            if isinstance(ev, h2.events.RequestReceived):
                log.write("%.6f\n" % time.time())
                answered += 1
                if answered <= first:
                    conn.send_headers(ev.stream_id, [
                        (":status", status), ("retry-after", "2"),
                        ("content-length", "0")], end_stream=True)
                else:
                    conn.send_headers(ev.stream_id, [
                        (":status", "200"), ("content-length", "3")])
                    conn.send_data(ev.stream_id, b"ok\n", end_stream=True)
        sock.sendall(conn.data_to_send())
