#!/usr/bin/env python3
"""downstream.py - a local HTTP downstream with a capacity, for the demo,
the integration tests and the benchmarks.

It serves requests one after another from a single FIFO "worker" that can
finish CAPACITY requests per second: a request waits for its turn, then takes
1/CAPACITY of the worker plus BASE milliseconds of fixed latency.  So latency
is the base plus exactly the queueing that an offered rate above the capacity
causes.  Both change on a schedule, OFFSET_S:VALUE,... from the start:
--schedule "0:150,10:40" is 150 req/s from t=0 s and 40 req/s from t=10 s,
--latency "0:10,12:60" a base of 10 ms, then 60 ms from t=12 s.  A capacity
of 0 refuses: the listening socket is closed (a connect fails with
ECONNREFUSED) and kept-alive connections are closed at their next request,
until the schedule gives a capacity again.

GET /stats returns JSON with the server-side latency of every request so far
(count, p50, p99, share inside --slo-ms) and resets nothing; GET /stop ends
the server at once; GET /anything else is a request.  With --log-dir, the
server writes there when it ends requests.csv (one row per request: arrival
and latency, from the start) and seconds.csv (per second of arrival: the
capacity and base latency of the schedule, requests, answers inside the SLO,
p50 and p99).  Listens on 127.0.0.1 only.  Exits by itself --lifetime seconds
after the start so a forgotten server never outlives its test.

One asyncio loop on one thread serves every connection, parsing only what a
GET needs: http.server's thread per connection cost a millisecond of CPU a
request, and with eight downstreams at once on a busy 2-core machine the
servers' own delays were most of the latency the clients measured.  Closing
and reopening the listening socket on a schedule is what a refusing
downstream needs, and asyncio's Server does it.
"""
import argparse
import asyncio
import json
import os
import time


def parse_schedule(text):
    """OFFSET_S:VALUE,... as [(offset, value)] sorted by offset."""
    items = []
    for item in text.split(","):
        offset, value = item.split(":")
        items.append((float(offset), float(value)))
    return sorted(items)


def at(schedule, t):
    """The schedule's value t seconds after the start."""
    value = schedule[0][1]
    for offset, v in schedule:
        if t >= offset:
            value = v
    return value


def quantile(sorted_values, p):
    n = len(sorted_values)
    if n == 0:
        return 0.0
    return sorted_values[min(n - 1, max(0, int(p * n + 0.999999) - 1))]


class Worker:
    """The downstream's single queue: one service slot after another."""

    def __init__(self, capacity, base):
        self.capacity_schedule = capacity
        self.base_schedule = base
        self.start = time.monotonic()
        self.next_free = self.start
        self.records = []  # (arrival since start, latency), both in s

    def capacity(self, now):
        return at(self.capacity_schedule, now - self.start)

    def refusing(self, now):
        return self.capacity(now) <= 0

    def admit(self):
        """A request arrives: when its answer is due (a time.monotonic()
        reading), from its turn in the queue plus the base latency."""
        arrival = time.monotonic()
        begin = max(arrival, self.next_free)
        cap = self.capacity(begin)
        # A request queued before a refusal began is still served, at the
        # last capacity the schedule gave before it.
        if cap <= 0:
            cap = next((c for o, c in reversed(self.capacity_schedule)
                        if c > 0 and o <= begin - self.start), 1.0)
        self.next_free = begin + 1.0 / cap
        base = at(self.base_schedule, begin - self.start) / 1000.0
        return arrival, self.next_free + base

    def answered(self, arrival):
        self.records.append((arrival - self.start, time.monotonic() - arrival))

    def stats(self, slo_s):
        lat = sorted(r[1] for r in self.records)
        n = len(lat)
        inside = sum(1 for x in lat if x <= slo_s)
        elapsed = time.monotonic() - self.start
        return {
            "count": n,
            "p50_ms": round(quantile(lat, 0.50) * 1000, 3),
            "p99_ms": round(quantile(lat, 0.99) * 1000, 3),
            "inside_slo": round(inside / n, 4) if n else 0.0,
            "rate_per_s": round(n / elapsed, 2) if elapsed > 0 else 0.0,
        }

    def write_logs(self, log_dir, slo_s, seconds):
        records = sorted(self.records)
        with open(os.path.join(log_dir, "requests.csv"), "w") as f:
            f.write("arrival_s,latency_ms\n")
            for arrival, latency in records:
                f.write("%.4f,%.3f\n" % (arrival, latency * 1000))
        per = [[] for _ in range(seconds)]
        for arrival, latency in records:
            k = int(arrival)
            if 0 <= k < seconds:
                per[k].append(latency)
        with open(os.path.join(log_dir, "seconds.csv"), "w") as f:
            f.write("t,capacity,base_ms,requests,inside_slo,p50_ms,p99_ms\n")
            for k, lat in enumerate(per):
                lat.sort()
                f.write("%d,%g,%g,%d,%d,%.2f,%.2f\n" % (
                    k, at(self.capacity_schedule, k + 0.5),
                    at(self.base_schedule, k + 0.5), len(lat),
                    sum(1 for x in lat if x <= slo_s),
                    quantile(lat, 0.5) * 1000, quantile(lat, 0.99) * 1000))


def response(body, keep_alive):
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
            b"Content-Length: %d\r\nConnection: %s\r\n\r\n%s" %
            (len(body), b"keep-alive" if keep_alive else b"close", body))


async def serve(args, worker):
    stop = asyncio.Event()
    slo_s = args.slo_ms / 1000.0

    async def handle(reader, writer):
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                parts = line.split()
                path = parts[1] if len(parts) > 1 else b"/"
                keep_alive = len(parts) > 2 and parts[2] == b"HTTP/1.1"
                while True:
                    header = await reader.readline()
                    if header in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = header.partition(b":")
                    if name.strip().lower() == b"connection":
                        keep_alive = value.strip().lower() == b"keep-alive"
                if path == b"/stats":
                    body = json.dumps(worker.stats(slo_s)).encode()
                elif path == b"/stop":
                    writer.write(response(b"stopping\n", False))
                    await writer.drain()
                    stop.set()
                    break
                elif worker.refusing(time.monotonic()):
                    # A kept-alive connection's next request while
                    # refusing: it closes unanswered, as a server that
                    # went away would close it.
                    break
                else:
                    arrival, due = worker.admit()
                    delay = due - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    worker.answered(arrival)
                    body = b"ok\n"
                writer.write(response(body, keep_alive))
                await writer.drain()
                if not keep_alive:
                    break
        except (OSError, asyncio.IncompleteReadError):
            # A client that hangs up mid-answer (ab -t at its deadline) is
            # normal here.
            pass
        finally:
            writer.close()

    async def listen(port):
        return await asyncio.start_server(handle, "127.0.0.1", port,
                                          reuse_address=True, backlog=1024)

    server = await listen(args.port)
    port = server.sockets[0].getsockname()[1]
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write(str(port))
    deadline = worker.start + args.lifetime
    while not stop.is_set() and time.monotonic() < deadline:
        refusing = worker.refusing(time.monotonic())
        if refusing and server is not None:
            server.close()
            server = None
        elif not refusing and server is None:
            server = await listen(port)
        try:
            await asyncio.wait_for(stop.wait(), 0.01)
        except asyncio.TimeoutError:
            pass
    if server is not None:
        server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--schedule", default="0:100",
                    help="capacity schedule: OFFSET_S:REQ_PER_S,... (0 refuses)")
    ap.add_argument("--base-ms", type=float, default=10.0)
    ap.add_argument("--latency",
                    help="base latency schedule: OFFSET_S:MS,... "
                         "(overrides --base-ms)")
    ap.add_argument("--slo-ms", type=float, default=100.0)
    ap.add_argument("--lifetime", type=float, default=300.0)
    ap.add_argument("--ready-file", help="written once the port is bound")
    ap.add_argument("--log-dir", help="requests.csv and seconds.csv go here")
    ap.add_argument("--t0", type=float,
                    help="the schedules' zero, a time.monotonic() reading "
                         "(CLOCK_MONOTONIC, shared by every process): "
                         "servers started one after another then share "
                         "one clock; default: now")
    args = ap.parse_args()

    base = (parse_schedule(args.latency) if args.latency
            else [(0.0, args.base_ms)])
    worker = Worker(parse_schedule(args.schedule), base)
    if args.t0 is not None:
        worker.start = worker.next_free = args.t0
    asyncio.run(serve(args, worker))
    if args.log_dir:
        seconds = int(time.monotonic() - worker.start)
        worker.write_logs(args.log_dir, args.slo_ms / 1000.0, seconds)


if __name__ == "__main__":
    main()
