#!/usr/bin/python3
"""h1server.py - an HTTP/1.1 server over cleartext whose answers the
recordings here need, chosen by path, kept alive:

    /busy         429 with Retry-After: 2
    /down         503
    /health       200 (exclude=/health in the harness)
    anything else 200 and a body

    h1server.py PORT

One connection at a time, until killed.
"""
import http.server
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        status = {"/busy": 429, "/down": 503}.get(self.path, 200)
        body = b"no\n" if status != 200 else b"ok\n"
        self.send_response(status)
        if status == 429:
            self.send_header("Retry-After", "2")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
