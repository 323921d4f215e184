#!/usr/bin/env python3
"""httpd.py - the downstream of the preload's integration tests.

A threaded HTTP/1.1 server on 127.0.0.1 (keep-alive capable) that answers
every GET with a short body after an optional fixed delay, and appends each
request's arrival time (CLOCK_MONOTONIC seconds, the clock the preload
paces on) to a log, so a test can measure the rate the server really saw;
and, given HANDLING_FILE, how long it took over each request (arrival to
response written, seconds): on a loaded machine more than DELAY_MS.

    httpd.py PORT_FILE ARRIVALS_FILE [DELAY_MS] [LIFETIME_S] [HANDLING_FILE]

It writes its port to PORT_FILE once it listens, and exits by itself after
LIFETIME_S seconds (default 120) so a test that dies cannot leak it.

The tests that need a server of their own answering differently write only
its handler class and hand it to serve(), which they import from here
(lib.sh puts this directory on PYTHONPATH):

    from httpd import Quiet, serve
    class Handler(Quiet): ...        # self.ok() answers "ok"
    serve(Handler, sys.argv[1])
"""
import http.server
import os
import socketserver
import sys
import threading
import time


class Quiet(http.server.BaseHTTPRequestHandler):
    """A handler for the tests' own servers: logs nothing, and ok() writes
    the 3-byte answer every test downstream gives (close: and says the
    connection ends with it)."""

    def ok(self, status=200, close=False):
        self.send_response(status)
        self.send_header("Content-Length", "3")
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, *args):
        pass


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    delay = 0.0
    log = None
    handling = None
    lock = threading.Lock()

    def do_GET(self):
        arrived = time.monotonic()
        with Handler.lock:
            Handler.log.write("%.6f\n" % arrived)
            Handler.log.flush()
        if Handler.delay > 0:
            time.sleep(Handler.delay)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if Handler.handling is not None:
            with Handler.lock:
                Handler.handling.write("%.6f\n" % (time.monotonic() - arrived))
                Handler.handling.flush()

    def log_message(self, fmt, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    # A thread for every connection, so a test's many clients are served at
    # once; daemon threads, so none of them can keep the process alive.
    daemon_threads = True


def serve(handler, port_file, lifetime_s=60, backlog=1024, ssl_context=None,
          sockopts=()):
    """Serve HTTP on 127.0.0.1, at a port the kernel picks, with `handler`
    (a BaseHTTPRequestHandler subclass) and a listen backlog of `backlog`;
    HTTPS when given a server-side ssl_context.  Each (level, option,
    value) of sockopts is set on the listening socket before it binds, and
    so on every connection it accepts, which inherits it from there.

    The port goes to port_file once the server listens, written beside it
    and renamed into place so a test polling for the file never reads it
    half-written.  The process exits after lifetime_s seconds whatever it is
    doing, so a test that dies cannot leak it.  Never returns.
    """
    server = Server(("127.0.0.1", 0), handler, bind_and_activate=False)
    server.request_queue_size = backlog
    for level, option, value in sockopts:
        server.socket.setsockopt(level, option, value)
    server.server_bind()
    server.server_activate()
    if ssl_context is not None:
        server.socket = ssl_context.wrap_socket(server.socket, server_side=True)
    threading.Timer(lifetime_s, lambda: os._exit(0)).start()
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


def main():
    port_file, arrivals = sys.argv[1], sys.argv[2]
    Handler.delay = float(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0.0
    lifetime = float(sys.argv[4]) if len(sys.argv) > 4 else 120.0
    Handler.log = open(arrivals, "a")
    if len(sys.argv) > 5:
        Handler.handling = open(sys.argv[5], "a")
    serve(Handler, port_file, lifetime, backlog=128)


if __name__ == "__main__":
    main()
