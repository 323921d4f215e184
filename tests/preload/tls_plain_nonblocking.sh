#!/bin/sh
# tls_plain_nonblocking.sh - a non-blocking TLS client is paced in its
# SSL_write, and nothing it is told is an error.
#
# Python's ssl on a non-blocking socket (the shape of an event loop): the
# handshake, then six requests on the one connection, each written with
# SSL_write_ex until done and its response read until complete, retrying
# on SSLWantWriteError and SSLWantReadError after select().  At
# floor=max=5 the plaintext hook waits for each request's grant inside the
# write, as a plain non-blocking send waits (preload/hooks/tls_plain.h:
# "would block" cannot be signalled from outside the library): the server
# sees the six requests over at least 0.8 s (five intervals of 0.2 s, less
# what a busy machine's late first arrival takes off; unpaced, 0.01 s) and
# the client sees six 200s, no error.  Then the same with a SIGALRM handler installed without
# SA_RESTART firing every 30 ms through a blocking client: the wait resumes
# after each signal instead of failing the write, so every request still
# succeeds and is paced.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
start_https <<'PY'
import sys, threading, time
from httpd import Quiet
tmp = sys.argv[1]
lock = threading.Lock()
class Handler(Quiet):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        with lock, open(tmp + "/arrivals", "a") as log:
            log.write("%.6f\n" % time.monotonic())
        self.ok()
PY
port=$https_port
cat >"$tmp/client.py" <<'PY'
import select, signal, socket, ssl, sys
port, mode = int(sys.argv[1]), sys.argv[2]
context = ssl._create_unverified_context()
raw = socket.create_connection(("127.0.0.1", port))
if mode == "signals":
    signal.signal(signal.SIGALRM, lambda *a: None)
    signal.siginterrupt(signal.SIGALRM, True)
    signal.setitimer(signal.ITIMER_REAL, 0.03, 0.03)
    s = context.wrap_socket(raw)
else:
    raw.setblocking(False)
    s = context.wrap_socket(raw, do_handshake_on_connect=False)
    while True:
        try:
            s.do_handshake()
            break
        except ssl.SSLWantReadError:
            select.select([s], [], [], 5)
        except ssl.SSLWantWriteError:
            select.select([], [s], [], 5)
def retry(op, *args):
    while True:
        try:
            return op(*args)
        except ssl.SSLWantReadError:
            select.select([s], [], [], 5)
        except ssl.SSLWantWriteError:
            select.select([], [s], [], 5)
ok = 0
for i in range(6):
    data = b"GET /%d HTTP/1.1\r\nHost: x\r\n\r\n" % i
    while data:
        data = data[retry(s.write, data):]
    answer = b""
    while not answer.endswith(b"ok\n"):
        answer += retry(s.read, 4096)
    ok += answer.startswith(b"HTTP/1.1 200")
# Stopped before the interpreter's exit puts the default action back.
signal.setitimer(signal.ITIMER_REAL, 0)
print(ok)
PY

for mode in nonblocking signals; do
	rm -f "$tmp/arrivals" "$AGILE_STATE"
	export AGILE_DEST_WEB="127.0.0.1:$port floor=5 max=5 initial=5"
	answered=$(preloaded python3 "$tmp/client.py" "$port" "$mode" 2>"$tmp/client.err") ||
		fail "$mode: the client failed: $(tail -3 "$tmp/client.err")"
	span=$(python3 - "$tmp/arrivals" <<'PY'
import sys
t = sorted(float(x) for x in open(sys.argv[1]))
print("%.3f" % (t[-1] - t[0]))
PY
)
	note "$mode: $answered of 6 answered 200 over $span s at the server, $(stat_json web 'd["samples_total"]') samples"
	check "v[0] == 6" "$mode: every request succeeds" "$answered"
	check "v[0] >= 0.8" "$mode: the requests are paced at 5/s" "$span"
	check "v[0] == 6" "$mode: one sample per request" \
		"$(stat_json web 'd["samples_total"]')"
done
