#!/bin/sh
# concurrency.sh - concurrency=4 holds a 32-thread client to 4 open
# connections, and permits held by a process killed with SIGKILL come back.
#
# The downstream records, for each request, when it had read the request
# and when it had finished its 50 ms of work: those intervals lie inside the
# client's connections, so at most 4 of them may overlap.  32 Python threads
# (blocking sockets with a timeout, which Python runs as O_NONBLOCK plus
# poll) each make 4 requests on fresh connections; with the cap the 128
# requests take at least 128 x 50 ms / 4 = 1.6 s.
#
# First a holder process opens 4 connections, sends nothing, and is killed
# with SIGKILL while the permits are its own.  Its words in the permit table
# still hold its pid; the client's first waiter must find them dead and
# reclaim them rather than wait out acquire_timeout (2 s here, after which
# the client's connects would fail with ETIMEDOUT).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

cat >"$tmp/server.py" <<'PY'
import os, socket, sys, threading, time
port_file, log = sys.argv[1], sys.argv[2]
lock = threading.Lock()
out = open(log, "a")
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
        with lock:
            out.write("%.6f %.6f\n" % (t0, t1))
            out.flush()
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
export AGILE_DEST_API="127.0.0.1:$port max=1000 floor=1000 concurrency=4 acquire_timeout=2s"

# The holder: 4 idle connections, then SIGKILL.
LD_PRELOAD="$PRELOAD" python3 - "$port" "$tmp/held" <<'PY' &
import socket, sys, time
port, flag = int(sys.argv[1]), sys.argv[2]
keep = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
open(flag, "w").write("4\n")
time.sleep(60)
PY
holder=$!
started $holder
await_file "$tmp/held" "the holder did not connect"
check "v[0] == 4" "the holder holds all 4 permits" \
	"$(stat_json api 'd["concurrency"]["open"]')"
kill -9 "$holder"
wait "$holder" 2>/dev/null || true

start=$(python3 -c 'import time; print(time.monotonic())')
preloaded python3 - "$port" <<'PY' || fail "the 32-thread client failed"
import http.client, sys, threading
port = int(sys.argv[1])
errors = []
def worker():
    for i in range(4):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/")
            r = c.getresponse()
            assert r.status == 200 and r.read() == b"ok\n"
            c.close()
        except Exception as e:
            errors.append(repr(e))
threads = [threading.Thread(target=worker) for _ in range(32)]
for t in threads: t.start()
for t in threads: t.join()
if errors:
    sys.exit("%d errors, first: %s" % (len(errors), errors[0]))
PY
elapsed=$(python3 -c "import time; print(time.monotonic() - $start)")
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
n=$(count_lines "$tmp/intervals")
note "128 requests from 32 threads in $elapsed s; at most $peak in service at once"
check "v[0] == 128" "the server answered every request" "$n"
check "v[0] <= 4" "at most 4 connections at once" "$peak"
check "v[0] == 4" "the cap was reached (the test tests something)" "$peak"
check "v[0] >= 1.5" "128 x 50 ms through 4 permits takes 1.6 s" "$elapsed"
check "v[0] >= 4" "the SIGKILLed holder's permits were reclaimed" \
	"$(stat_json api 'd["concurrency"]["reclaimed"]')"
check "v[0] == 0" "no connect timed out" \
	"$(stat_json api 'd["concurrency"]["timeouts"]')"
check "v[0] == 0" "every permit was given back" \
	"$(stat_json api 'd["concurrency"]["open"]')"
