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
"""
import http.server
import socketserver
import sys
import threading
import time


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
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def main():
    port_file, arrivals = sys.argv[1], sys.argv[2]
    Handler.delay = float(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0.0
    lifetime = float(sys.argv[4]) if len(sys.argv) > 4 else 120.0
    Handler.log = open(arrivals, "a")
    if len(sys.argv) > 5:
        Handler.handling = open(sys.argv[5], "a")
    server = Server(("127.0.0.1", 0), Handler)
    threading.Timer(lifetime, server.shutdown).start()
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    import os
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
