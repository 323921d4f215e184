#!/bin/sh
# connect.sh - connect_timeout= and retry= on blocking connects, alone and
# together.
#
# connect_timeout: a listener whose accept queue is full drops new SYNs, so
# a connect to it hangs for the kernel's SYN retries (a minute or two).  A
# Python client connecting with a plain blocking socket must get ETIMEDOUT
# after connect_timeout=300ms instead.
#
# retry: a server that starts listening once the client's connect has been
# refused twice.  Without retry= that connect is refused at once; with
# retry=8 the preload retries the refused connect on the same socket after
# waits of about 100, 200, 400 ms ... up to 1 s (the backoff preset,
# jittered within 20%), and the client's single connect() succeeds once
# the server listens: within the longest wait, 1.2 s, of it, plus one
# scheduling delay.  The server is started first and told when to listen,
# as agilestat counts the retries: started 0.5 s after the client, as it
# was, a loaded machine could start the client so late that its first
# attempt already found the server up (connected after 0.32 s, the retries
# never made).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

# A listener with a full accept queue: prints its port, keeps it full.
python3 - "$tmp/hole" <<'PY' &
import os, socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(0)
port = s.getsockname()[1]
fill = []
for i in range(3):
    c = socket.socket()
    c.setblocking(False)
    try:
        c.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    fill.append(c)
time.sleep(0.2)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % port)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(60)
PY
started $!
hole=$(await_port "$tmp/hole")

cat >"$tmp/connect.py" <<'PY'
import errno, socket, sys, time
port = int(sys.argv[1])
s = socket.socket()          # blocking, no timeout: a plain connect(2)
t = time.monotonic()
try:
    s.connect(("127.0.0.1", port))
    result = "connected"
except OSError as e:
    result = errno.errorcode.get(e.errno, str(e.errno))
end = time.monotonic()
print("%s %.3f %.6f" % (result, end - t, end))
PY

export AGILE_DEST_HOLE="127.0.0.1:$hole max=100 connect_timeout=300ms"
set -- $(preloaded python3 "$tmp/connect.py" "$hole")
note "connect to a black hole with connect_timeout=300ms: $1 after $2 s"
check "v[0] == 1" "the connect fails with ETIMEDOUT" "$([ "$1" = ETIMEDOUT ] && echo 1 || echo 0)"
check "0.29 <= v[0] < 1" "after connect_timeout" "$2"
check "v[0] == 1" "agilestat counts the timeout" "$(stat_json hole 'd["connect"]["timeouts"]')"

port=$(closed_port)
export AGILE_DEST_LATE="127.0.0.1:$port max=100"
set -- $(preloaded python3 "$tmp/connect.py" "$port")
note "without retry=: $1 after $2 s"
check "v[0] == 1" "a refused connect fails at once" "$([ "$1" = ECONNREFUSED ] && echo 1 || echo 0)"

export AGILE_DEST_LATE="127.0.0.1:$port max=100 retry=8"
# The server listens once $tmp/listen exists, and says when it did.
python3 -c '
import os, socket, sys, time
port, go, said = int(sys.argv[1]), sys.argv[2], sys.argv[3]
end = time.monotonic() + 60
while not os.path.exists(go) and time.monotonic() < end:
    time.sleep(0.005)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(8)
with open(said + ".tmp", "w") as f:
    f.write("%.6f\n" % time.monotonic())
os.rename(said + ".tmp", said)
time.sleep(10)' "$port" "$tmp/listen" "$tmp/listening" </dev/null &
started $!
preloaded python3 "$tmp/connect.py" "$port" >"$tmp/late.out" &
client=$!
started $client
i=0
until [ "$(stat_json late 'd["connect"]["retries"]' 2>/dev/null)" -ge 2 ] 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -le 200 ] || fail "the client's connect was never retried twice"
	sleep 0.05
done
touch "$tmp/listen"
wait "$client" || fail "the client failed"
set -- $(cat "$tmp/late.out")
listening=$(cat "$tmp/listening")
after=$(python3 -c 'import sys; print("%.3f" % (float(sys.argv[1]) - float(sys.argv[2])))' "$3" "$listening")
note "with retry=8, the server listening after two refusals: $1 after $2 s, $after s after it listened"
check "v[0] == 1" "the retried connect succeeds" "$([ "$1" = connected ] && echo 1 || echo 0)"
check "0 <= v[0] <= 1.2 + 0.5" "within the longest wait of the server listening, and one scheduling delay" "$after"
check "v[0] >= 2" "agilestat counts the retries" "$(stat_json late 'd["connect"]["retries"]')"

# connect_timeout= and retry= together on a refused port.  connect_timeout
# makes the attempt non-blocking and used to read its result with
# getsockopt(SO_ERROR), after which Linux answers the socket's next
# connect() with ECONNABORTED instead of trying again: retry='s second
# attempt got it and handed it to the program, uncounted (the program saw
# ECONNABORTED, once per connect, and nothing was unreachable).  Each of
# the program's two blocking connects on one socket must now be refused as
# without the preload, after two retries each.
port=$(closed_port)
export AGILE_DEST_BOTH="127.0.0.1:$port max=100 connect_timeout=2s retry=2"
cat >"$tmp/twice.py" <<'PY'
import errno, socket, sys
s = socket.socket()
for _ in range(2):
    try:
        s.connect(("127.0.0.1", int(sys.argv[1])))
        print("connected")
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))
PY
results=$(preloaded python3 "$tmp/twice.py" "$port" | tr '\n' ' ')
note "connect_timeout=2s retry=2, a blocking socket connected twice to a refused port: $results"
[ "$results" = "ECONNREFUSED ECONNREFUSED " ] || fail "the connects answered '$results', not ECONNREFUSED twice"
check "v[0] == 4" "each connect was retried twice" "$(stat_json both 'd["connect"]["retries"]')"
check "v[0] == 2" "each connect is one connection" "$(stat_json both 'd["connects"]')"
check "v[0] == 2" "each refused connect is unreachable" "$(stat_json both 'd["unreachable"]')"
