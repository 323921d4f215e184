#!/bin/sh
# breaker.sh - breaker=sre against a downstream that fails, then recovers.
#
# A Python client makes an HTTP request on a fresh connection every 2 ms.
# The downstream answers for 1.5 s, then for 2 s accepts each connection and
# closes it unanswered (truncated: a failure), then for 2 s does not listen
# at all (refused: unreachable, a failure too), then answers again.  With
# breaker=sre (the preset: k 1.5, protection 5, a 10 s window) the preload
# must turn the failing calls away at once with ECONNREFUSED, as often as the
# breaker's drop ratio says (agilestat shows it, high during the outage),
# and once the downstream is back pass at least half of the client's
# requests within 6 s (go-zero's breaker stayed open 15 minutes after a
# one-minute outage).  floor = probe = max keeps the rate limiter out of the
# picture: what is measured is the breaker.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

cat >"$tmp/server.py" <<'PY'
import os, select, socket, sys, threading, time
port_file, mode_file, phases_file = sys.argv[1:4]
threading.Timer(120, lambda: os._exit(0)).start()
def listener(port=0):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(512)
    return s
def handle(c, mode):
    try:
        c.settimeout(5)
        if not c.recv(4096) or mode == "close":
            return
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n"
                  b"Connection: close\r\n\r\nok\n")
    except OSError:
        pass
    finally:
        c.close()
s = listener()
port = s.getsockname()[1]
with open(port_file + ".tmp", "w") as f:
    f.write("%d\n" % port)
os.rename(port_file + ".tmp", port_file)
# Each change of mode, with the time it took effect here, to phases_file.
phases = open(phases_file, "a", buffering=1)
current = "ok"
while True:
    try:
        mode = open(mode_file).read().strip() or current
    except OSError:
        mode = "ok"
    if mode == "down":
        if s is not None:
            s.close()
            s = None
    elif s is None:
        s = listener(port)
    if mode != current:
        current = mode
        phases.write("%s %.6f\n" % (mode, time.monotonic()))
    if s is None:
        time.sleep(0.005)
        continue
    if select.select([s], [], [], 0.005)[0]:
        c, _ = s.accept()
        threading.Thread(target=handle, args=(c, mode), daemon=True).start()
PY
echo ok >"$tmp/mode"
python3 "$tmp/server.py" "$tmp/port" "$tmp/mode" "$tmp/phases" </dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")
export AGILE_DEST_API="127.0.0.1:$port max=500 floor=500 probe=500 initial=500 breaker=sre"

# The client runs until $tmp/stop appears (60 s at most), so the phases
# below are timed from its first requests, not from its start-up, which
# takes a second or more on a loaded machine.
LD_PRELOAD="$PRELOAD" python3 - "$port" "$tmp/attempts" "$tmp/stop" <<'PY' &
import os, socket, sys, time
port, log, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
out = open(log, "w", buffering=1)
end = time.monotonic() + 60
while time.monotonic() < end and not os.path.exists(stop):
    t = time.monotonic()
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
        c.sendall(b"GET / HTTP/1.0\r\n\r\n")
        outcome = "ok" if c.recv(100).startswith(b"HTTP/1.0 200") else "fail"
        c.close()
    except ConnectionRefusedError:
        outcome = "refused"
    except OSError:
        outcome = "fail"
    out.write("%.6f %s\n" % (t, outcome))
    time.sleep(0.002)
out.close()
PY
client=$!
started $client
i=0
while [ "$(cat "$tmp/attempts" 2>/dev/null | wc -l)" -lt 10 ]; do
	i=$((i + 1))
	[ "$i" -le 400 ] || fail "the client never got going"
	sleep 0.05
done
# The phases are timed by the server, as it switches (in $tmp/phases): a
# time taken here after the switch would be late by a Python start-up,
# up to a second on a loaded machine, and count calls of the next phase
# in the last (a healthy phase with 82% refused was seen that way).
sleep 1.5
echo close >"$tmp/mode"
# How fast the drop ratio climbs depends on how many answered calls the
# 10 s window holds, i.e. on how fast the client ran while healthy, and
# on how fast it fails now: after 2 s of truncated answers 0.43 to 0.6
# was seen, and 0.1 on a machine loaded four times over.  So the
# truncating phase lasts until agilestat shows 0.5 (1 s at least, 20 at
# most), and half a second more: the ratio only grows while calls fail,
# so in that last half second the breaker must refuse about half of them.
# (The phase lasts 2 to 5.6 s; the longer it is, the longer the breaker
# takes to recover, which the last checks bound.)
sleep 1
i=0
until [ "$(stat_json api 'int(d["breaker"]["drop_ratio"] >= 0.5)')" = 1 ]; do
	i=$((i + 1))
	[ "$i" -le 90 ] || break
	sleep 0.2
done
sleep 0.5
echo down >"$tmp/mode"
sleep 1.8
ratio=$(stat_json api 'd["breaker"]["drop_ratio"]')
sleep 0.2
echo ok >"$tmp/mode"
sleep 8.5
touch "$tmp/stop"
wait "$client" || fail "the client failed"

python3 - "$tmp/attempts" "$tmp/phases" >"$tmp/figures" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
rows = [(float(t), o) for t, o in rows]
phases = [l.split() for l in open(sys.argv[2])]
t_close, t_down, t_up = (float(t) for _, t in phases[:3])
assert [m for m, _ in phases[:3]] == ["close", "down", "ok"], phases
def share(a, b, what):
    r = [o for t, o in rows if a <= t < b]
    return (sum(o in what for o in r) / len(r) if r else 0.0), len(r)
# Healthy: the calls before the first failure, and before the truncating
# phase began.  A call started just before the switch can still be
# accepted after it, and fail: from there on the breaker may refuse.
first_failure = next((i for i, (_, o) in enumerate(rows) if o == "fail"),
                     len(rows))
healthy_rows = [o for t, o in rows[:first_failure] if t < t_close]
n0 = len(healthy_rows)
healthy = sum(o == "refused" for o in healthy_rows) / n0 if n0 else 0.0
# The last half second of the truncating phase: the real server accepts
# every connection, so every refusal there is the breaker's.
closing, n1 = share(t_down - 0.5, t_down, ("refused",))
# After recovery: the first 0.5 s window from which on at least half of the
# requests are answered.
recovered = None
t = t_up
while t < rows[-1][0] - 0.5:
    s, n = share(t, t + 0.5, ("ok",))
    if n > 0 and s >= 0.5:
        recovered = t + 0.5 - t_up
        break
    t += 0.1
last, n3 = share(rows[-1][0] - 1, rows[-1][0] + 1, ("ok",))
print(healthy, closing, recovered if recovered is not None else 99, last,
      n0, n1, "%.1f" % (t_down - t_close))
PY
set -- $(cat "$tmp/figures")
note "refused while healthy $1 (of $5), while truncating $2 (of $6 in the last 0.5 s of $7 s);"
note "drop ratio near the outage's end $ratio; half answered again $3 s after recovery; finally $4 answered"
check "v[0] >= 10" "the client called the healthy downstream (the test tests something)" "$5"
check "v[0] == 0" "a healthy downstream is never refused" "$1"
# In the last half second of the truncating phase the drop ratio was past
# 0.5 (see above); a refused share of 0.3 leaves room for a few dozen
# calls' chance.
check "v[0] >= 0.3" "the breaker turns failing calls away while the downstream fails" "$2"
check "v[0] >= 0.5" "agilestat shows the drop ratio during the outage" "$ratio"
check "v[0] <= 6" "at least half the traffic passes within 6 s of recovery" "$3"
check "v[0] >= 0.8" "and nearly all of it soon after" "$4"
check "v[0] > 100" "the breaker counted its refusals" \
	"$(stat_json api 'd["breaker"]["refused"]')"
check "v[0] < v[1]" "refusals are not counted as unreachable" \
	"$(stat_json api 'd["unreachable"]')" "$(stat_json api 'd["breaker"]["refused"]')"
"$AGILESTAT" | grep -q '^  breaker sre: drop ratio ' ||
	fail "agilestat's table shows no breaker line"
"$AGILESTAT" --prometheus | grep -q '^agile_breaker_drop_ratio{name="api",' ||
	fail "agilestat --prometheus has no agile_breaker_drop_ratio series"
