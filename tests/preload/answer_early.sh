#!/bin/sh
# answer_early.sh - a program that sends on one socket after another
# before it reads any of them has its answers recorded while it still
# sends, once each (issue 15).
#
# One thread opens 16 connections and sends a request on each in turn at
# 4 a second: each send after the first waits for its grant, and the wait
# watches the sockets already sent on.  Their answers arrive meanwhile,
# and the wait reads them at once by a peek (preload/track/wait.c), so the
# controller has the round trips of the first 15 before the program reads
# a byte.  Stamped only, they reached it at the program's reads: ab -c 32
# at 1 a second read its answers 32 s after it sent them, and after an SLO
# break no tick saw an answer to climb back on.  The program then reads
# them all: one sample per request, not two.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=4 floor=4 initial=4"
preloaded python3 - "$port" "$AGILESTAT" "$tmp/before.json" <<'PY' ||
import json, socket, subprocess, sys
port, agilestat, before = int(sys.argv[1]), sys.argv[2], sys.argv[3]
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(16)]
for i, s in enumerate(socks):
    s.sendall(b"GET /%d HTTP/1.0\r\nHost: x\r\n\r\n" % i)
# Nothing read yet: what the controller has seen so far.
with open(before, "w") as f:
    subprocess.run([agilestat, "--json"], stdout=f, check=True)
for s in socks:
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    assert data.split(b"\r\n")[0].endswith(b"200 OK"), data
    s.close()
PY
	fail "the client failed"
seen=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print(next(d for d in j["destinations"] if d["name"] == "api")["samples_total"])
' "$tmp/before.json") || fail "no destination api before the reads"
note "$seen samples before the program read any answer"
check "v[0] >= 12" "the answers are recorded while the program sends" "$seen"
check "v[0] == 16" "one sample per request" \
	"$(stat_json api 'd["samples_total"]')"

# An interim answer (100 Continue) stays readable, and the request stays
# in flight: the wait must leave it to the read, not peek at it round
# after round (a busy loop of 0.8 s of CPU in a 0.9 s wait, before).
cat >"$tmp/continue.py" <<'PY'
import socket, sys, threading
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
open(sys.argv[1], "w").write("%d\n" % s.getsockname()[1])
def serve(c):
    with c:
        if b"Expect" in c.recv(4096):
            c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            c.recv(4096)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
python3 "$tmp/continue.py" "$tmp/continue.port" </dev/null \
	>"$tmp/continue.log" 2>&1 &
started $!
cport=$(await_port "$tmp/continue.port" "$tmp/continue.log")
export AGILE_DEST_UP="127.0.0.1:$cport max=2 floor=2 initial=2"
cpu=$(preloaded python3 - "$cport" <<'PY'
import resource, socket, sys
port = int(sys.argv[1])
a = socket.create_connection(("127.0.0.1", port))
a.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
          b"Content-Length: 2\r\n\r\n")
assert a.recv(100).startswith(b"HTTP/1.1 100"), "no 100 Continue"
# Its bytes read, a peek would now see none; send a second interim-only
# request on a fresh connection and leave it unread while b waits.
c = socket.create_connection(("127.0.0.1", port))
c.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
          b"Content-Length: 2\r\n\r\n")
b = socket.create_connection(("127.0.0.1", port))
u0 = resource.getrusage(resource.RUSAGE_SELF)
b.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
u1 = resource.getrusage(resource.RUSAGE_SELF)
print("%.3f" % (u1.ru_utime + u1.ru_stime - u0.ru_utime - u0.ru_stime))
for s, body in ((a, True), (c, True), (b, False)):
    if body:
        s.sendall(b"ok")
    while b"ok" not in s.recv(4096):
        pass
PY
) || fail "the 100-continue client failed"
note "a wait beside an unread 100 Continue used $cpu s of CPU"
check "v[0] < 0.3" "no busy loop on an interim answer during a wait" "$cpu"
