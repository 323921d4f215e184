#!/bin/sh
# concurrency_adaptive.sh - concurrency=adaptive under each law.
#
# 32 Python threads make 20 requests each, on fresh connections, to a
# downstream that takes 50 ms per request.  adaptx's windowed laws (aimd,
# vegas, gradient) start at a limit of 10 and move it at most once per
# 1 s window, so the server never sees 32 requests in service at once, and
# the limit has moved by the end; law=agile (the core controller) starts at
# 10 too and doubles while the round trips stay healthy.  No connect may
# fail or time out under any of them.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

cat >"$tmp/server.py" <<'PY'
import os, socket, sys, threading, time
port_file, log = sys.argv[1], sys.argv[2]
lock = threading.Lock()
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(256)
threading.Timer(120, lambda: os._exit(0)).start()
def handle(c):
    try:
        if not c.recv(4096):
            return
        t0 = time.monotonic()
        time.sleep(0.05)
        t1 = time.monotonic()
        with lock, open(log, "a") as out:
            out.write("%.6f %.6f\n" % (t0, t1))
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n"
                  b"Connection: close\r\n\r\nok\n")
    finally:
        c.close()
with open(port_file + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename(port_file + ".tmp", port_file)
while True:
    c, _ = s.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
PY
python3 "$tmp/server.py" "$tmp/port" "$tmp/intervals" </dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")

for law in aimd vegas gradient agile; do
	rm -f "$tmp/intervals"
	export AGILE_DEST_API="127.0.0.1:$port max=1000 floor=1000 concurrency=adaptive,law=$law"
	preloaded python3 - "$port" <<'PY' || fail "the client failed under law=$law"
import http.client, sys, threading
port = int(sys.argv[1])
errors = []
def worker():
    for i in range(20):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/")
            c.getresponse().read()
            c.close()
        except Exception as e:
            errors.append(repr(e))
threads = [threading.Thread(target=worker) for _ in range(32)]
for t in threads: t.start()
for t in threads: t.join()
if errors:
    sys.exit("%d errors, first: %s" % (len(errors), errors[0]))
PY
	peak=$(python3 - "$tmp/intervals" <<'PY'
import sys
events = []
for line in open(sys.argv[1]):
    a, b = map(float, line.split())
    events += [(a, 1), (b, -1)]
events.sort(key=lambda e: (e[0], e[1]))
now = peak = 0
for _, d in events:
    now += d
    peak = max(peak, now)
print(peak)
PY
)
	limit=$(stat_json api 'd["concurrency"]["limit"]')
	note "law=$law: limit now $limit, at most $peak in service at once"
	check "v[0] == 640" "law=$law: every request answered" "$(count_lines "$tmp/intervals")"
	check "v[0] != 10" "law=$law: the limit moved from its start" "$limit"
	check "v[0] == 0" "law=$law: no connect timed out" \
		"$(stat_json api 'd["concurrency"]["timeouts"]')"
	if [ "$law" != agile ]; then
		check "v[0] < 32" "law=$law: the cap held the 32 threads back" "$peak"
	fi
done
