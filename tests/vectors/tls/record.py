#!/usr/bin/python3
"""record.py - record a client's TLS connection, ciphertext and plaintext,
as a test vector for the seeds of tests/fuzz/corpus/tls_plain/.

    record.py OUT LISTEN_PORT SERVER_PORT CERT KEY

A TLS server on 127.0.0.1:LISTEN_PORT (Python's ssl on memory BIOs,
ALPN h2 and http/1.1) that takes one connection and passes its plaintext
to 127.0.0.1:SERVER_PORT in cleartext, and writes, in the order they
happened, each piece as the client saw it: a byte 'C' (ciphertext the
client sent), 'S' (ciphertext it received), 'c' (plaintext it wrote),
's' (plaintext it read), a 4-byte big-endian length, the bytes.  The
pieces are this server's reads and writes: on loopback, the client's
writes are its records, and a plaintext piece is what one SSL_write
wrote or, for 's', what the server behind answered in one write.  It
exits when the client has closed.
"""
import select
import socket
import ssl
import struct
import sys

out, listen_port, server_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[4], sys.argv[5])
context.set_alpn_protocols(["h2", "http/1.1"])
pieces = []

listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", listen_port))
listener.listen(1)
listener.settimeout(20)
client, _ = listener.accept()
incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = context.wrap_bio(incoming, outgoing, server_side=True)
server = None


def flush():
    data = outgoing.read()
    if data:
        pieces.append((b"S", data))
        client.sendall(data)


def plaintext():
    """Pass on what the client wrote; False once it said goodbye."""
    while True:
        try:
            data = tls.read(65536)
        except ssl.SSLWantReadError:
            return True
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            return False
        if not data:
            return False
        pieces.append((b"c", data))
        server.sendall(data)


open_ = True
while open_:
    ready, _, _ = select.select([client] + ([server] if server else []),
                                [], [], 20)
    if not ready:
        break
    if client in ready:
        data = client.recv(65536)
        if not data:
            break
        pieces.append((b"C", data))
        incoming.write(data)
        if server is None:
            try:
                tls.do_handshake()
                server = socket.create_connection(("127.0.0.1", server_port))
            except ssl.SSLWantReadError:
                pass
        if server is not None:
            open_ = plaintext()
        flush()
    if server is not None and server in ready:
        data = server.recv(65536)
        if not data:
            break
        pieces.append((b"s", data))
        tls.write(data)
        flush()
client.close()
if server is not None:
    server.close()
with open(out, "wb") as f:
    for tag, data in pieces:
        f.write(tag + struct.pack(">I", len(data)) + data)
