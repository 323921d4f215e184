#!/usr/bin/env python3
"""downstream.py - a local HTTP downstream with a capacity, for the demo,
the integration tests and the benchmarks.

It serves requests one after another from a single FIFO "worker" that can
finish CAPACITY requests per second: a request waits for its turn, then takes
1/CAPACITY of the worker plus BASE milliseconds of fixed latency.  So latency
is the base plus exactly the queueing that an offered rate above the capacity
causes, and the capacity can change on a schedule ("0:150,10:40" = 150 req/s
from t=0 s, 40 req/s from t=10 s).

GET /stats returns JSON with the server-side latency of every request so far
(count, p50, p99, share inside --slo-ms) and resets nothing; GET /anything
else is a request.  Listens on 127.0.0.1 only.  Exits by itself after
--lifetime seconds so a forgotten server never outlives its test.
"""
import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Worker:
    """The downstream's single queue: one service slot after another."""

    def __init__(self, schedule, base_s):
        self.schedule = schedule  # [(t_offset_s, capacity_per_s)] sorted
        self.base_s = base_s
        self.start = time.monotonic()
        self.next_free = self.start
        self.lock = threading.Lock()
        self.latencies = []

    def capacity(self, now):
        cap = self.schedule[0][1]
        for offset, c in self.schedule:
            if now - self.start >= offset:
                cap = c
        return cap

    def serve(self):
        arrival = time.monotonic()
        with self.lock:
            begin = max(arrival, self.next_free)
            self.next_free = begin + 1.0 / self.capacity(begin)
        done = self.next_free + self.base_s
        delay = done - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        latency = time.monotonic() - arrival
        with self.lock:
            self.latencies.append(latency)
        return latency

    def stats(self, slo_s):
        with self.lock:
            lat = sorted(self.latencies)
        n = len(lat)

        def q(p):
            return lat[min(n - 1, max(0, int(p * n + 0.999999) - 1))] if n else 0.0

        inside = sum(1 for x in lat if x <= slo_s)
        elapsed = time.monotonic() - self.start
        return {
            "count": n,
            "p50_ms": round(q(0.50) * 1000, 3),
            "p99_ms": round(q(0.99) * 1000, 3),
            "inside_slo": round(inside / n, 4) if n else 0.0,
            "rate_per_s": round(n / elapsed, 2) if elapsed > 0 else 0.0,
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--schedule", default="0:100",
                    help="capacity schedule: OFFSET_S:REQ_PER_S,...")
    ap.add_argument("--base-ms", type=float, default=10.0)
    ap.add_argument("--slo-ms", type=float, default=100.0)
    ap.add_argument("--lifetime", type=float, default=300.0)
    ap.add_argument("--ready-file", help="written once the port is bound")
    args = ap.parse_args()

    schedule = sorted((float(a), float(b)) for a, b in
                      (item.split(":") for item in args.schedule.split(",")))
    worker = Worker(schedule, args.base_ms / 1000.0)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            if self.path == "/stats":
                body = json.dumps(worker.stats(args.slo_ms / 1000.0)).encode()
            else:
                worker.serve()
                body = b"ok\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024

        def handle_error(self, request, client_address):
            # A client that hangs up mid-answer (ab -t at its deadline) is
            # normal here, not worth a traceback.
            pass

    server = Server(("127.0.0.1", args.port), Handler)
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write(str(server.server_address[1]))
    threading.Timer(args.lifetime, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
