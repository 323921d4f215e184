#!/bin/sh
# event_loop.sh - an epoll event loop is paced without busy-spinning.
#
# Python's asyncio drives 30 non-blocking connections from one epoll loop,
# like Node.js/libuv.  The preload must neither fake EAGAIN nor make the
# loop spin: at floor=max=15/s the 30 requests take about 2 s of wall time,
# the server must see 15/s within 15%, and the process must use well under
# a second of CPU for it (trickle spins at 100%).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=15 floor=15 initial=15"
cpu=$(preloaded python3 - "$port" <<'PY'
import asyncio, resource, sys
port = int(sys.argv[1])
async def one(i):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(b"GET /%d HTTP/1.0\r\nHost: x\r\n\r\n" % i)
    await w.drain()
    data = await r.read()
    w.close()
    assert data.split(b"\r\n")[0].endswith(b"200 OK"), data
async def main():
    await asyncio.gather(*(one(i) for i in range(30)))
asyncio.run(main())
u = resource.getrusage(resource.RUSAGE_SELF)
print("%.3f" % (u.ru_utime + u.ru_stime))
PY
) || fail "the asyncio client failed"
rate=$(arrival_rate "$tmp/api.arrivals")
note "asyncio: 30 requests at $rate/s using $cpu s of CPU"
check "15 * 0.85 <= v[0] <= 15 * 1.15" "the event loop gets 15/s" "$rate"
check "v[0] < 0.8" "no busy-spinning while paced" "$cpu"
check "v[0] == 30" "one sample per request" "$(stat_json api 'd["samples_total"]')"
