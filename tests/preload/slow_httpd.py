#!/usr/bin/env python3
"""slow_httpd.py - the downstream of the concurrency tests.

Every GET takes 50 ms of work and is answered "ok" with Connection: close;
the interval the request was in service (CLOCK_MONOTONIC seconds, from its
arrival to the end of its work) is appended to INTERVALS_FILE as one line
"START END", so a test can count the most requests in service at once
(lib.sh's peak_in_service).

    slow_httpd.py PORT_FILE INTERVALS_FILE

INTERVALS_FILE is opened again for every line, so a test may remove it
between runs.  The port and the bounded lifetime (120 s) are httpd.serve()'s.
"""
import sys
import threading
import time

from httpd import Quiet, serve


class Handler(Quiet):
    protocol_version = "HTTP/1.0"
    intervals = None
    lock = threading.Lock()

    def do_GET(self):
        start = time.monotonic()
        time.sleep(0.05)
        end = time.monotonic()
        with Handler.lock, open(Handler.intervals, "a") as out:
            out.write("%.6f %.6f\n" % (start, end))
        self.ok(close=True)


if __name__ == "__main__":
    Handler.intervals = sys.argv[2]
    serve(Handler, sys.argv[1], lifetime_s=120)
