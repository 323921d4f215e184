#!/usr/bin/env python3
"""closed-loop.py - the closed-loop benchmark's driver (scripts/bench-closed-loop
builds, installs and calls it): real clients through the preload against a
real loopback downstream whose capacity and latency follow a schedule.

For each schedule and client, every arm runs at the same time, each with its
own downstream (scripts/downstream.py on its own port, all on one clock, the
--t0 they share) and its own state file: on a 2-core machine the arms one
after another would take eight times as long, and in parallel they all meet
the same machine.  The downstream logs each request; everything below is
read from those logs, never from the clients' own reports, so every client
and arm is measured the same way:

  served      answers in the run
  in SLO      the share of them answered within the SLO (server side, from
              arrival to answer)
  goodput/s   answers within the SLO per second of the run
  p99         over the run
  to cap      after each capacity step, seconds until a second whose
              requests are within 10% of the new capacity with their p99
              inside the SLO (served at the capacity, not queued at it: a
              closed-loop client with no limiter always sends at the
              capacity); the worst step's, "never" if some step's never came
  to SLO      after each drop (capacity down, a refusal ending, or latency
              coming back inside the SLO), seconds until a second's p99 is
              inside the SLO again; the worst step's
  swing       the widest tick-to-tick change of the limiter's rate
              (agilestat's history) in a steady phase, from 5 s after a
              step to the next, as a share of the phase's mean rate; none
              for the diurnal ramp, which has no steady phase, nor for the
              arm without a limiter

The oracle is not run: it is the physical limit computed from the schedule,
a rate equal to the capacity each second, every request inside the SLO
whenever base latency + 1/capacity is.  A fixed rate per phase, run, can
only come under it.

Usage: closed-loop.py --build DIR --out DIR [--quick] [--schedules a,b]
                      [--clients ab,wrk,py] [--arms a,b] [--arm NAME=KEYS]
                      [--repeat N]
                      [--no-plots] [--keep]
"""
import argparse
import csv
import http.client
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLO_MS = 50.0
CONNECTIONS = 32
MAX_RATE = 600
# The default arm's keys, which every other limited arm but the fixed
# ones starts from.
DEFAULT_KEYS = "max=%d slo=%dms" % (MAX_RATE, SLO_MS)


def diurnal(duration, high, low, step_s=2):
    """A day in `duration` seconds, from high down to low and back, in
    steps of step_s seconds (the downstream's schedule is piecewise)."""
    mid, amp = (high + low) / 2, (high - low) / 2
    return [(t, round(mid + amp * math.cos(2 * math.pi * (t + step_s / 2) /
                                           duration)))
            for t in range(0, duration, step_s)]


# capacity and latency: [(offset_s, value)]; the first phase is the
# opening one.  Each 40-48 s.
SCHEDULES = {
    "drop-recover": dict(
        title="capacity 250 -> 80 at 12 s -> 250 at 26 s",
        duration=40, capacity=[(0, 250), (12, 80), (26, 250)],
        latency=[(0, 10)]),
    "low-start": dict(
        title="recovery from a low start: 60 -> 240 at 14 s",
        duration=40, capacity=[(0, 60), (14, 240)], latency=[(0, 10)]),
    "diurnal": dict(
        title="slow diurnal ramp 250 -> 80 -> 250 over 48 s",
        duration=48, capacity=diurnal(48, 250, 80), latency=[(0, 10)]),
    "benign-bump": dict(
        title="benign latency bump 10 -> 25 ms from 12 to 28 s, 200 req/s",
        duration=40, capacity=[(0, 200)],
        latency=[(0, 10), (12, 25), (28, 10)]),
    "slo-bump": dict(
        title="latency past the SLO, 10 -> 60 ms from 12 to 28 s, 200 req/s",
        duration=40, capacity=[(0, 200)],
        latency=[(0, 10), (12, 60), (28, 10)]),
    "refusing": dict(
        title="capacity 200, refusing (0) from 15 to 20 s",
        duration=40, capacity=[(0, 200), (15, 0), (20, 200)],
        latency=[(0, 10)]),
}
QUICK = ["drop-recover"]

CLIENTS = ["ab", "wrk", "py"]
CLIENT_LABELS = {"ab": "ab -c 32", "wrk": "wrk -t2 -c32",
                 "py": "python http.client x32"}


def low_high(capacity):
    caps = [c for _, c in capacity if c > 0]
    return min(caps), max(caps)


def arms_for(schedule):
    """(name, label, rule keys or None for no limiter)."""
    low, high = low_high(schedule["capacity"])
    base = DEFAULT_KEYS
    arms = [
        ("none", "no limiter", None),
        ("default", "default", base),
        ("fixed-low", "fixed %d (low)" % low, "floor=%d max=%d" % (low, low)),
    ]
    if high != low:
        arms.append(("fixed-high", "fixed %d (high)" % high,
                     "floor=%d max=%d" % (high, high)))
    arms += [
        ("seed", "preset=seed", base + " preset=seed"),
        ("aimd", "adaptx AIMD", base + " concurrency=adaptive,law=aimd"),
        ("vegas", "adaptx Vegas", base + " concurrency=adaptive,law=vegas"),
        ("gradient", "adaptx Gradient",
         base + " concurrency=adaptive,law=gradient"),
    ]
    return arms


COLORS = {"none": "#999999", "default": "#009e73", "fixed-low": "#56b4e9",
          "fixed-high": "#d55e00", "seed": "#000080", "aimd": "#cc79a7",
          "vegas": "#8b4513", "gradient": "#9400d3", "oracle": "#000000"}

# The Python client: CONNECTIONS threads, each on one kept-alive
# http.client connection, sending the next request when the last is
# answered, reconnecting after an error (50 ms later: a refusing
# downstream would otherwise be a busy loop).
PY_CLIENT = r"""
import http.client, sys, threading, time
port, seconds, n = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
end = time.monotonic() + seconds
def run():
    conn = None
    while time.monotonic() < end:
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api")
            conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            if conn is not None:
                conn.close()
            conn = None
            time.sleep(0.05)
threads = [threading.Thread(target=run, daemon=True) for _ in range(n)]
for t in threads: t.start()
for t in threads: t.join(seconds + 6)
"""

# ab exits at its first refused connect: the wrapper starts it again, as a
# user would, until the run's end.
AB_LOOP = r"""
end=$(( $(date +%s) + $2 ))
while [ "$(date +%s)" -lt "$end" ]; do
	ab -q -r -s 5 -t $(( end - $(date +%s) )) -n 100000000 -c $3 \
		"http://127.0.0.1:$1/api" >/dev/null 2>&1 || sleep 0.05
done
"""


def client_argv(client, port, seconds):
    if client == "ab":
        return ["bash", "-c", AB_LOOP, "ab-loop", str(port), str(seconds),
                str(CONNECTIONS)]
    if client == "wrk":
        return ["wrk", "-t2", "-c%d" % CONNECTIONS, "-d%ds" % seconds,
                "--timeout", "5s", "http://127.0.0.1:%d/api" % port]
    return [sys.executable, "-c", PY_CLIENT, str(port), str(seconds),
            str(CONNECTIONS)]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def schedule_text(items):
    return ",".join("%g:%g" % (o, v) for o, v in items)


def at(items, t):
    value = items[0][1]
    for o, v in items:
        if t >= o:
            value = v
    return value


def quantile(values, p):
    n = len(values)
    if n == 0:
        return 0.0
    return values[min(n - 1, max(0, int(p * n + 0.999999) - 1))]


def run_batch(build, work, sname, schedule, client, arms, run=0):
    """Every arm of one schedule and client at once; returns {arm:
    ([(arrival_s, latency_ms)], [rate at each second's end, or None])}."""
    duration = schedule["duration"]
    # The schedules' zero, shared by every arm's downstream: time enough
    # for eight Python servers to start on a busy machine (their own
    # start-up took over 2 s at a load average of 14).
    t0 = time.monotonic() + 3.0
    wall_t0 = time.time() + (t0 - time.monotonic())
    servers, clients, dirs = {}, {}, {}
    try:
        for name, _, _ in arms:
            d = os.path.join(work, "%s-%s-%s%s" % (
                sname, client, name, "-%d" % (run + 1) if run else ""))
            os.makedirs(d)
            dirs[name] = d
            port = free_port()
            servers[name] = (port, subprocess.Popen(
                [sys.executable, os.path.join(TOP, "scripts", "downstream.py"),
                 "--port", str(port), "--slo-ms", str(SLO_MS),
                 "--schedule", schedule_text(schedule["capacity"]),
                 "--latency", schedule_text(schedule["latency"]),
                 "--t0", repr(t0), "--lifetime", str(duration + 20),
                 "--ready-file", os.path.join(d, "ready"), "--log-dir", d],
                stdout=subprocess.DEVNULL, stderr=open(
                    os.path.join(d, "downstream.err"), "w")))
        for name, _, _ in arms:
            ready = os.path.join(dirs[name], "ready")
            for _ in range(750):
                if os.path.exists(ready) and os.path.getsize(ready) > 0:
                    break
                time.sleep(0.02)
            else:
                raise RuntimeError("the downstream of %s did not start" % name)
        delay = t0 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        for name, _, rule in arms:
            port = servers[name][0]
            argv = client_argv(client, port, duration)
            if rule is not None:
                argv = [os.path.join(build, "src", "tools", "agilerun"),
                        "-s", os.path.join(dirs[name], "state"),
                        "-d", "ds=127.0.0.1:%d %s" % (port, rule), "--"] + argv
            clients[name] = subprocess.Popen(
                argv, stdout=subprocess.DEVNULL,
                stderr=open(os.path.join(dirs[name], "client.err"), "w"),
                start_new_session=True)
        for name, p in clients.items():
            try:
                p.wait(timeout=duration + 15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for name, _, rule in arms:
            state = os.path.join(dirs[name], "state")
            if rule is not None and os.path.exists(state):
                with open(os.path.join(dirs[name], "history.csv"), "w") as f:
                    subprocess.run(
                        [os.path.join(build, "src", "tools", "agilestat"),
                         "-s", state, "-H"],
                        stdout=f, stderr=subprocess.DEVNULL)
        for name, (port, p) in servers.items():
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/stop" % port,
                                       timeout=2).read()
            except (OSError, http.client.HTTPException):
                pass
            p.wait(timeout=10)
    finally:
        for p in clients.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for _, p in servers.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    out = {}
    for name, _, rule in arms:
        rates = None
        history = os.path.join(dirs[name], "history.csv")
        if rule is not None and os.path.exists(history):
            # One row per tick, stamped with the wall clock: the rate each
            # second of the run ends with.
            rates = [None] * duration
            with open(history) as f:
                for r in csv.DictReader(f):
                    k = int(float(r["unix_time"]) - wall_t0) - 1
                    if 0 <= k < duration:
                        rates[k] = float(r["rate"])
        rows = []
        with open(os.path.join(dirs[name], "requests.csv")) as f:
            for r in csv.DictReader(f):
                a = float(r["arrival_s"])
                if 0 <= a < duration:
                    rows.append((a, float(r["latency_ms"])))
        out[name] = (rows, rates)
    return out


def per_second(rows, duration):
    sent = [0] * duration
    lat = [[] for _ in range(duration)]
    for a, l in rows:
        k = int(a)
        sent[k] += 1
        lat[k].append(l)
    p99 = [quantile(sorted(x), 0.99) for x in lat]
    return sent, p99


def steps_of(schedule):
    """(t, kind) for each change: 'cap' for a capacity step to a positive
    capacity, 'drop' where the SLO can be met again after the change but
    was, or may have been, broken by it (a capacity drop, a refusal ending,
    latency coming back)."""
    caps, lats = schedule["capacity"], schedule["latency"]
    times = sorted(set(o for o, _ in caps[1:]) | set(o for o, _ in lats[1:]))
    out = []
    for t in times:
        before_c, after_c = at(caps, t - 0.01), at(caps, t)
        before_l, after_l = at(lats, t - 0.01), at(lats, t)
        if after_c > 0 and after_c != before_c:
            out.append((t, "cap"))
        feasible = after_c > 0 and after_l + 1000 / after_c <= SLO_MS
        if feasible and (after_c < before_c or before_c == 0 or
                         after_l < before_l):
            out.append((t, "drop"))
    return out


def measures(schedule, sent, p99):
    duration = schedule["duration"]
    caps = schedule["capacity"]
    steps = steps_of(schedule)
    bounds = [t for t, _ in steps] + [duration]
    to_cap, to_slo = [], []
    for t, kind in steps:
        t = int(t)
        end = min(b for b in bounds if b > t)
        end = int(end) if end > t else duration
        target = at(caps, t + 0.5)
        hit = None
        for k in range(t, min(end, duration)):
            if kind == "cap" and abs(sent[k] - target) <= 0.1 * target and \
                    p99[k] <= SLO_MS:
                hit = k - t
                break
            if kind == "drop" and sent[k] > 0 and p99[k] <= SLO_MS:
                hit = k - t
                break
        (to_cap if kind == "cap" else to_slo).append(hit)
    return to_cap, to_slo


def swing_of(schedule, rates):
    """The widest tick-to-tick change of `rates` (per second from the
    start, None where unknown) in a steady phase, over the phase's mean;
    None when there is no steady phase or no rate."""
    duration = schedule["duration"]
    if len(schedule["capacity"]) > 6:  # the diurnal ramp
        return None
    changes = sorted(set([0] + [int(t) for t, _ in steps_of(schedule)] +
                         [int(o) for o, _ in schedule["latency"][1:]]))
    swing = None
    for i, c in enumerate(changes):
        end = changes[i + 1] if i + 1 < len(changes) else duration
        seg = [r for r in rates[c + 5:end] if r is not None]
        if len(seg) < 4 or sum(seg) == 0:
            continue
        mean = sum(seg) / len(seg)
        for a, b in zip(seg, seg[1:]):
            swing = max(swing or 0.0, abs(b - a) / mean)
    return swing


def worst(values):
    if not values:
        return ""
    if any(v is None for v in values):
        return "never"
    return str(max(values))


def oracle(schedule):
    duration = schedule["duration"]
    served = inside = 0.0
    rates = []
    for k in range(duration):
        c = at(schedule["capacity"], k + 0.5)
        l = at(schedule["latency"], k + 0.5)
        rates.append(c)
        served += c
        if c > 0 and l + 1000 / c <= SLO_MS:
            inside += c
    return served, inside, rates


def summarize(schedule, rows, rates):
    duration = schedule["duration"]
    lat = sorted(l for _, l in rows)
    served = len(lat)
    inside = sum(1 for l in lat if l <= SLO_MS)
    sent, p99s = per_second(rows, duration)
    to_cap, to_slo = measures(schedule, sent, p99s)
    swing = swing_of(schedule, rates) if rates else None
    return dict(served=served,
                inside_pct=100.0 * inside / served if served else 0.0,
                goodput=inside / duration, p99=quantile(lat, 0.99),
                to_cap=worst(to_cap), to_slo=worst(to_slo),
                to_cap_all=to_cap, to_slo_all=to_slo,
                swing=None if swing is None else 100 * swing, sent=sent,
                p99s=p99s)


def median_run(summaries):
    """Of one arm's runs, the one with the median goodput (the lower middle
    of an even count), carrying the range of all of them: one run's own
    figures, so that a row never mixes runs."""
    ordered = sorted(summaries, key=lambda r: r["goodput"])
    r = dict(ordered[(len(ordered) - 1) // 2])
    r["goodput_min"] = ordered[0]["goodput"]
    r["goodput_max"] = ordered[-1]["goodput"]
    r["runs"] = len(ordered)
    return r


def plot(out, sname, schedule, series, clients):
    """One PNG per schedule: for each client, the sending rate of every arm
    against the capacity, and its p99 per second against the SLO."""
    duration = schedule["duration"]
    dat = os.path.join(out, sname + ".dat")
    names = []
    with open(dat, "w") as f:
        cols = ["t", "capacity"]
        for client in clients:
            for arm in series[client]:
                cols += ["%s_%s_rate" % (client, arm),
                         "%s_%s_p99" % (client, arm)]
                names.append((client, arm))
        f.write("# " + " ".join(cols) + "\n")
        for k in range(duration):
            row = ["%d" % k, "%g" % at(schedule["capacity"], k + 0.5)]
            for client, arm in names:
                s = series[client][arm]
                row += ["%d" % s["sent"][k], "%.1f" % max(s["p99s"][k], 0.1)]
            f.write(" ".join(row) + "\n")
    gp = os.path.join(out, sname + ".gp")
    with open(gp, "w") as f:
        f.write("set terminal png size 1100,%d font ',9'\n" %
                (300 * len(clients) + 60))
        f.write("set output '%s.png'\n" % sname)
        f.write("set multiplot layout %d,2 title '%s: %s'\n" %
                (len(clients), sname, schedule["title"]))
        f.write("set grid\nset key outside right top\n")
        for client in clients:
            arms = list(series[client])
            f.write("unset logscale y\nset ylabel '%s: sent (req/s)'\n" %
                    CLIENT_LABELS[client])
            parts = ["'%s.dat' using 1:2 with steps lw 3 lc 'black' "
                     "title 'capacity'" % sname]
            for arm in arms:
                col = 3 + 2 * names.index((client, arm))
                parts.append("'' using 1:%d with lines lw %d lc '%s' "
                             "title '%s'" % (col, 3 if arm == "default" else 1,
                                             COLORS.get(arm, "#e69f00"), arm))
            f.write("plot " + ", \\\n  ".join(parts) + "\n")
            f.write("set logscale y\nset ylabel 'p99 (ms)'\n")
            parts = ["%g with lines lw 2 lc 'black' dt 2 title 'SLO'" % SLO_MS]
            for arm in arms:
                col = 4 + 2 * names.index((client, arm))
                parts.append("'%s.dat' using 1:%d with lines lw %d lc '%s' "
                             "title '%s'" % (sname, col,
                                             3 if arm == "default" else 1,
                                             COLORS.get(arm, "#e69f00"), arm))
            f.write("plot " + ", \\\n  ".join(parts) + "\n")
        f.write("unset multiplot\n")
    if shutil.which("gnuplot"):
        subprocess.run(["gnuplot", os.path.basename(gp)], cwd=out, check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--schedules")
    ap.add_argument("--clients")
    ap.add_argument("--arms")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run each batch N times and report, per arm, the "
                         "run with the median goodput, with the range")
    ap.add_argument("--arm", action="append", default=[],
                    metavar="NAME=KEYS",
                    help="one more arm: the default's keys and KEYS (down=0.15, "
                         "say), named NAME; repeatable")
    ap.add_argument("--keep", action="store_true",
                    help="keep each arm's logs, state file and agilestat "
                         "history, and say where")
    args = ap.parse_args()

    snames = (args.schedules.split(",") if args.schedules else
              QUICK if args.quick else list(SCHEDULES))
    clients = args.clients.split(",") if args.clients else CLIENTS
    for s in snames:
        if s not in SCHEDULES:
            sys.exit("closed-loop: unknown schedule %s" % s)
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="closed-loop.")
    results = {}  # (schedule, client, arm) -> summary
    labels = {}
    started = time.monotonic()
    try:
        for sname in snames:
            schedule = SCHEDULES[sname]
            arms = arms_for(schedule)
            if args.arms:
                keep = args.arms.split(",")
                arms = [a for a in arms if a[0] in keep]
            for extra in args.arm:
                name, _, keys = extra.partition("=")
                if (not name or not keys or name in COLORS or
                        name in [a[0] for a in arms]):
                    sys.exit("closed-loop: --arm %s: expected NAME=KEYS, "
                             "NAME not an arm's" % extra)
                arms.append((name, "default " + keys,
                             DEFAULT_KEYS + " " + keys))
            series = {}
            for client in clients:
                runs = []
                for n in range(args.repeat):
                    print("== %s, %s: %d arms at once, %d s%s" %
                          (sname, CLIENT_LABELS[client], len(arms),
                           schedule["duration"],
                           ", run %d of %d" % (n + 1, args.repeat)
                           if args.repeat > 1 else ""),
                          file=sys.stderr, flush=True)
                    runs.append(run_batch(args.build, work, sname, schedule,
                                          client, arms, n))
                series[client] = {}
                for name, label, _ in arms:
                    labels[(sname, name)] = label
                    r = median_run([summarize(schedule, *rows[name])
                                    for rows in runs])
                    results[(sname, client, name)] = r
                    series[client][name] = r
            if not args.no_plots:
                plot(args.out, sname, schedule, series, clients)
    finally:
        if args.keep:
            print("closed-loop: the runs' files are in %s" % work,
                  file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    report(args, snames, clients, results, labels)
    print("closed-loop: %.0f s in all" % (time.monotonic() - started),
          file=sys.stderr)


def report(args, snames, clients, results, labels):
    md = []
    md.append("| schedule | client | arm | served | %% in SLO (%g ms) | "
              "goodput/s | vs oracle | p99 ms | to ±10%% cap s | "
              "p99 back s | swing %% |" % SLO_MS)
    md.append("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    csv_rows = [["schedule", "client", "arm", "served", "inside_slo_pct",
                 "goodput_per_s", "oracle_share_pct", "p99_ms",
                 "to_capacity_s", "p99_back_s", "swing_pct",
                 "goodput_min_per_s", "goodput_max_per_s", "runs"]]
    for sname in snames:
        schedule = SCHEDULES[sname]
        o_served, o_inside, _ = oracle(schedule)
        o_goodput = o_inside / schedule["duration"]
        md.append("| %s | — | oracle (the schedule) | %.0f | %.1f | %.1f | "
                  "100%% | | | | |" % (sname, o_served,
                                        100 * o_inside / o_served, o_goodput))
        csv_rows.append([sname, "", "oracle", "%.0f" % o_served,
                         "%.1f" % (100 * o_inside / o_served),
                         "%.1f" % o_goodput, "100", "", "", "", "",
                         "%.1f" % o_goodput, "%.1f" % o_goodput, ""])
        for client in clients:
            first = True
            for key in [k for k in results if k[0] == sname and k[1] == client]:
                r = results[key]
                share = 100 * r["goodput"] / o_goodput if o_goodput else 0
                arm = labels[(sname, key[2])]
                bold = "**" if key[2] == "default" else ""
                swing = "" if r["swing"] is None else "%.0f" % r["swing"]
                goodput = "%.1f" % r["goodput"]
                if r["runs"] > 1:
                    goodput += " (%.0f–%.0f)" % (r["goodput_min"],
                                                 r["goodput_max"])
                md.append("| %s | %s | %s%s%s | %d | %.1f | %s | %.0f%% | "
                          "%.0f | %s | %s | %s |" % (
                              "", CLIENT_LABELS[client] if first else "",
                              bold, arm, bold, r["served"], r["inside_pct"],
                              goodput, share, r["p99"], r["to_cap"],
                              r["to_slo"], swing))
                csv_rows.append([sname, client, key[2], r["served"],
                                 "%.1f" % r["inside_pct"],
                                 "%.1f" % r["goodput"], "%.0f" % share,
                                 "%.0f" % r["p99"], r["to_cap"], r["to_slo"],
                                 swing, "%.1f" % r["goodput_min"],
                                 "%.1f" % r["goodput_max"], r["runs"]])
                first = False
    with open(os.path.join(args.out, "closed-loop.csv"), "w", newline="") as f:
        csv.writer(f).writerows(csv_rows)
    targets = judge(snames, clients, results)
    text = "\n".join(md) + "\n\n" + "\n".join(targets) + "\n"
    with open(os.path.join(args.out, "closed-loop.md"), "w") as f:
        f.write(text)
    print(text)


def judge(snames, clients, results):
    """The issue's targets for the default arm, each with its number."""
    lines = ["Targets for the default arm:", ""]

    def line(ok, text):
        lines.append("- %s %s" % ("met:" if ok else "NOT met:", text))

    for client in clients:
        for sname in snames:
            r = results.get((sname, client, "default"))
            if r is None:
                continue
            schedule = SCHEDULES[sname]
            _, o_inside, _ = oracle(schedule)
            o_goodput = o_inside / schedule["duration"]
            share = 100 * r["goodput"] / o_goodput if o_goodput else 100
            caps = [v for v in r["to_cap_all"]]
            slos = [v for v in r["to_slo_all"]]
            ok = (r["inside_pct"] >= 90 and share >= 85 and
                  all(v is not None and v <= 5 for v in caps) and
                  all(v is not None and v <= 3 for v in slos) and
                  (r["swing"] is None or r["swing"] <= 30))
            swing = ("-" if r["swing"] is None else
                     "±%.0f%%" % (r["swing"] / 2))
            line(ok, "%s, %s: %.1f%% in SLO (≥ 90), goodput %.0f%% of the "
                 "oracle (≥ 85), to ±10%% cap %s s (≤ 5), p99 back %s s "
                 "(≤ 3), swing %s (≤ ±15%%)" % (
                     sname, CLIENT_LABELS[client], r["inside_pct"], share,
                     r["to_cap"] or "-", r["to_slo"] or "-", swing))
        sums = {}
        for (sname, c, arm), r in results.items():
            if c == client:
                sums[arm] = sums.get(arm, 0) + r["goodput"]
        fixed = {a: v for a, v in sums.items() if a.startswith("fixed")}
        if "default" in sums and fixed:
            best = max(fixed.values())
            line(sums["default"] > best,
                 "%s: goodput summed over the schedules %.0f/s, every fixed "
                 "rate's under it (best fixed %.0f/s)" % (
                     CLIENT_LABELS[client], sums["default"], best))
    return lines


if __name__ == "__main__":
    main()
