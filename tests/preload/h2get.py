#!/usr/bin/python3
"""h2get.py - an HTTP/2 client over cleartext (Python's h2) that makes N
requests for PATH one after another on one connection, each after the
last one's answer, and prints each answer's :status: a program whose
every request goes through the preload's HTTP/2 send and receive paths.

    h2get.py PORT N [PATH]
"""
import socket
import sys

import h2.config
import h2.connection
import h2.events

port, n = int(sys.argv[1]), int(sys.argv[2])
path = sys.argv[3] if len(sys.argv) > 3 else "/"
sock = socket.create_connection(("127.0.0.1", port))
conn = h2.connection.H2Connection(
    h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
conn.initiate_connection()
sock.sendall(conn.data_to_send())
for _ in range(n):
    stream = conn.get_next_available_stream_id()
    conn.send_headers(stream, [(":method", "GET"), (":path", path),
                               (":scheme", "http"),
                               (":authority", "127.0.0.1")],
                      end_stream=True)
    sock.sendall(conn.data_to_send())
    done = False
    while not done:
        data = sock.recv(65536)
        if not data:
            sys.exit("h2get.py: the server closed the connection")
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived) and \
                    ev.stream_id == stream:
                print(dict(ev.headers)[":status"], flush=True)
            elif isinstance(ev, h2.events.StreamEnded) and \
                    ev.stream_id == stream:
                done = True
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
conn.close_connection()
sock.sendall(conn.data_to_send())
sock.close()
