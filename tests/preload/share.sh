#!/bin/sh
# share.sh - two processes get the whole budget between them, not half each.
#
# Under trickle's daemon two processes each get half of the configured rate,
# whatever the other uses.  Here the bucket is shared: two Python
# processes, each making requests as fast as it is allowed on its own
# kept-alive connection for 3 s at floor=max=20/s, must together get 20/s
# (the server's count within 15%), each at least a third of it.  Then one
# greedy process runs next to one that needs only 2/s: the greedy one must
# get the rest (at least 14/s of the 18/s left), the light one what it asks
# for; an even split would hold the greedy one to 10/s.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=20 floor=20 initial=20"
cat >"$tmp/client.py" <<'PY'
import http.client, sys, time
port, seconds, pause = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port)
start = time.monotonic()
n = 0
while time.monotonic() - start < seconds:
    c.request("GET", "/share")
    c.getresponse().read()
    n += 1
    time.sleep(pause)
print("%.3f" % (n / (time.monotonic() - start)))
PY

preloaded python3 "$tmp/client.py" "$port" 3 0 >"$tmp/a" & a=$!
preloaded python3 "$tmp/client.py" "$port" 3 0 >"$tmp/b" & b=$!
wait "$a" || fail "client a failed"
wait "$b" || fail "client b failed"
rate=$(arrival_rate "$tmp/api.arrivals")
note "two greedy processes: $(cat "$tmp/a")/s and $(cat "$tmp/b")/s; server saw $rate/s"
check "20 * 0.85 <= v[0] <= 20 * 1.15" "together they get the whole 20/s" "$rate"
check "v[0] >= 20 / 3 and v[1] >= 20 / 3" "each gets a fair part of it" \
	"$(cat "$tmp/a")" "$(cat "$tmp/b")"

: >"$tmp/api.arrivals"
preloaded python3 "$tmp/client.py" "$port" 3 0 >"$tmp/a" & a=$!
preloaded python3 "$tmp/client.py" "$port" 3 0.5 >"$tmp/b" & b=$!
wait "$a" || fail "client a failed"
wait "$b" || fail "client b failed"
rate=$(arrival_rate "$tmp/api.arrivals")
note "greedy and light processes: $(cat "$tmp/a")/s and $(cat "$tmp/b")/s; server saw $rate/s"
check "v[0] >= 14" "the greedy process gets what the light one leaves" "$(cat "$tmp/a")"
check "1.2 <= v[0] <= 2.1" "the light process gets its 2/s" "$(cat "$tmp/b")"
check "v[0] <= 20 * 1.15" "together no more than the ceiling" "$rate"
