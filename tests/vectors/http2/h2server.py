#!/usr/bin/python3
"""h2server.py - an HTTP/2 server over cleartext (Python's h2, Debian's
python3-h2) whose answers the test vectors of tests/check_h2walk.c need,
chosen by path:

    /ok           200 and a body
    /429          429 with Retry-After: 2
    /503          503 with Retry-After: Sun, 06 Nov 2044 08:49:37 GMT
    /early        103 Early Hints, then 200
    /cached       200 with X-Cache: HIT and Age: 5
    /padded       200, its body in DATA frames padded by 17 bytes
    /grpc-ok      gRPC: headers, one message, trailers grpc-status 0
    /grpc-unavailable  gRPC trailers-only: grpc-status 14
    /reset        RST_STREAM(REFUSED_STREAM)
    /goaway       200, then GOAWAY naming this stream the last
    anything else 404

    h2server.py PORT

One connection at a time, until killed.
"""
import socket
import sys

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

port = int(sys.argv[1])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(5)


def answer(conn, stream, path):
    if path == "/ok":
        conn.send_headers(stream, [(":status", "200"), ("content-length", "3")])
        conn.send_data(stream, b"ok\n", end_stream=True)
    elif path == "/429":
        conn.send_headers(stream, [(":status", "429"), ("retry-after", "2")],
                          end_stream=True)
    elif path == "/503":
        conn.send_headers(stream, [(":status", "503"),
                                   ("retry-after", "Sun, 06 Nov 2044 08:49:37 GMT")],
                          end_stream=True)
    elif path == "/early":
        conn.send_headers(stream, [(":status", "103"), ("link", "</s.css>; rel=preload")])
        conn.send_headers(stream, [(":status", "200")])
        conn.send_data(stream, b"late\n", end_stream=True)
    elif path == "/cached":
        conn.send_headers(stream, [(":status", "200"), ("x-cache", "HIT from edge"),
                                   ("age", "5")])
        conn.send_data(stream, b"old\n", end_stream=True)
    elif path == "/padded":
        conn.send_headers(stream, [(":status", "200")])
        conn.send_data(stream, b"pad", pad_length=17)
        conn.send_data(stream, b"ded\n", end_stream=True, pad_length=17)
    elif path == "/grpc-ok":
        conn.send_headers(stream, [(":status", "200"),
                                   ("content-type", "application/grpc")])
        conn.send_data(stream, b"\0\0\0\0\x02\x08\x01")
        conn.send_headers(stream, [("grpc-status", "0")], end_stream=True)
    elif path == "/grpc-unavailable":
        conn.send_headers(stream, [(":status", "200"),
                                   ("content-type", "application/grpc+proto"),
                                   ("grpc-status", "14"),
                                   ("grpc-message", "no backend")],
                          end_stream=True)
    elif path == "/reset":
        conn.reset_stream(stream, error_code=7)
    elif path == "/goaway":
        conn.send_headers(stream, [(":status", "200")], end_stream=True)
        conn.close_connection(last_stream_id=stream)
    else:
        conn.send_headers(stream, [(":status", "404")], end_stream=True)


while True:
    sock, _ = listener.accept()
    conn = h2.connection.H2Connection(
        config=h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    paths = {}
    while True:
        try:
            data = sock.recv(65536)
        except OSError:
            break
        if not data:
            break
        try:
            events = conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            break  # after its GOAWAY, say
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                paths[event.stream_id] = dict(event.headers)[b":path"].decode()
            elif isinstance(event, h2.events.StreamEnded):
                if event.stream_id in paths:
                    answer(conn, event.stream_id, paths[event.stream_id])
            elif isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length,
                                               event.stream_id)
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
    sock.close()
