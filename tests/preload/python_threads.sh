#!/bin/sh
# python_threads.sh - Python 3, eight threads, blocking sockets.
#
# Python creates its sockets with SOCK_CLOEXEC (which trickle does not
# recognise) and each thread keeps one HTTP/1.1 connection alive for ten
# requests.  With pace=request (the default) every request takes a grant,
# so the eight threads together must get floor=max=40/s within 15%, with one
# sample per request and one paced connection per thread.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=40 floor=40 initial=40"
preloaded python3 - "$port" <<'PY' || fail "the Python client failed"
import http.client, sys, threading
port = int(sys.argv[1])
errors = []
def worker(k):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for i in range(10):
            c.request("GET", "/%d/%d" % (k, i))
            r = c.getresponse()
            assert r.status == 200 and r.read() == b"ok\n"
        c.close()
    except Exception as e:
        errors.append(e)
threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
for t in threads: t.start()
for t in threads: t.join()
sys.exit(1 if errors else 0)
PY

n=$(count_lines "$tmp/api.arrivals")
rate=$(arrival_rate "$tmp/api.arrivals")
note "$n requests from 8 threads: $rate/s"
check "v[0] == 80" "the server saw every request" "$n"
check "40 * 0.85 <= v[0] <= 40 * 1.15" "8 threads together get 40/s" "$rate"
check "v[0] == 80" "one sample per request" "$(stat_json api 'd["samples_total"]')"
check "v[0] == 8" "one paced connection per thread" "$(stat_json api 'd["connects"]')"
