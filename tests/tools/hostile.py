#!/usr/bin/env python3
"""hostile.py - the requests a server facing any local client must survive,
sent to agilestat --serve.

    hostile.py URL

Each case opens its own connection and checks the answer: an unknown path
is a 404; a POST with a body a 405 naming GET and HEAD; HEAD /metrics a
200 with no body; headers of 40 KiB a 431 (under load libmicrohttpd sends
some of those seconds late, or closes the connection at its idle timeout
instead, which is as good); a GET announcing a body it never finishes is
answered at once and its connection closed (the body is not read); a line
that is not HTTP closes the connection; and a client that sends half a
request line and nothing more is cut off by the server's idle timeout
(10 s) rather than held for ever.  Each case waits 15 s at most for the
server to close.  Prints a line per case; exits 1 when one does not hold.
"""
import socket
import sys
import time
from urllib.parse import urlsplit


def exchange(address, data, wait=3.0):
    """Send DATA, read until the server closes or WAIT s pass in silence.
    Returns (bytes read, whether the server closed, seconds taken)."""
    s = socket.create_connection(address, timeout=wait)
    start = time.monotonic()
    s.sendall(data)
    out, closed = b"", False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            out += chunk
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    s.close()
    return out, closed, time.monotonic() - start


def main():
    where = urlsplit(sys.argv[1])
    address = (where.hostname, where.port)
    host = b"Host: x\r\n"
    cases = [
        ("unknown path: 404", b"GET /nope HTTP/1.1\r\n" + host + b"Connection: close\r\n\r\n",
         lambda out, closed, t: out.startswith(b"HTTP/1.1 404 ")),
        ("POST with a body: 405, Allow: GET, HEAD",
         b"POST /json HTTP/1.1\r\n" + host + b"Content-Length: 5\r\nConnection: close\r\n\r\nhello",
         lambda out, closed, t: out.startswith(b"HTTP/1.1 405 ") and b"Allow: GET, HEAD" in out),
        ("HEAD /metrics: 200, no body",
         b"HEAD /metrics HTTP/1.1\r\n" + host + b"Connection: close\r\n\r\n",
         lambda out, closed, t: out.startswith(b"HTTP/1.1 200 ") and out.endswith(b"\r\n\r\n")),
        ("40 KiB of headers: 431, or closed by the idle timeout",
         b"GET /json HTTP/1.1\r\n" + host + b"X-Big: " + b"a" * 40960 + b"\r\n\r\n",
         lambda out, closed, t: out.startswith(b"HTTP/1.1 431 ") or
         (closed and not out)),
        ("a GET announcing a 1 GB body, sending 5 bytes: answered, closed",
         b"GET /json HTTP/1.1\r\n" + host + b"Content-Length: 1000000000\r\n\r\nhello",
         lambda out, closed, t: out.startswith(b"HTTP/1.1 200 ") and closed),
        ("not HTTP: closed", b"\x16\x03\x01\x02\x00garbage\r\n\r\n",
         lambda out, closed, t: closed and not out.startswith(b"HTTP/1.1 200")),
    ]
    failed = False
    for name, data, ok in cases:
        out, closed, t = exchange(address, data, wait=15)
        good = ok(out, closed, t)
        print("  %s: %s (%s)" % (name, "ok" if good else "FAILED",
                                 out.split(b"\r\n", 1)[0].decode(errors="replace") or
                                 ("closed" if closed else "no answer")))
        failed |= not good
    out, closed, t = exchange(address, b"GET /json HTT", wait=15)
    good = closed and 8 <= t <= 14
    print("  half a request line, then silence: %s (closed %s after %.1f s)"
          % ("ok" if good else "FAILED", closed, t))
    failed |= not good
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
