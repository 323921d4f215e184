#!/bin/sh
# threads_repeat.sh - eight threads, ten times over: no crash, no hang.
#
# trickle crashes with eight threads in six runs out of ten, so one run
# proves little.  A Python client runs eight threads that each make two
# requests on fresh connections and three on one kept-alive connection,
# all at once, at floor=max=400/s so that the threads contend in the
# preload's bucket, descriptor table and sample path rather than sleep;
# it is run ten times in a row.  Every run must exit 0 within 30 s with
# every response whole, and the shared record must hold every request of
# the ten runs as one sample (400) on 240 connections.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=400 floor=400 initial=400"
cat >"$tmp/threads.py" <<'PY'
import http.client, sys, threading
port = int(sys.argv[1])
errors = []
def get(c, path):
    c.request("GET", path)
    r = c.getresponse()
    assert r.status == 200 and r.read() == b"ok\n"
def worker(k):
    try:
        for i in range(2):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            get(c, "/fresh/%d/%d" % (k, i))
            c.close()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for i in range(3):
            get(c, "/kept/%d/%d" % (k, i))
        c.close()
    except Exception as e:
        errors.append(repr(e))
threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
for t in threads: t.start()
for t in threads: t.join()
if errors:
    sys.exit("; ".join(errors))
PY
for run in 1 2 3 4 5 6 7 8 9 10; do
	preloaded timeout 30 python3 "$tmp/threads.py" "$port" ||
		fail "run $run of 10 failed (status $?)"
done
note "10 runs of 8 threads: $(count_lines "$tmp/api.arrivals") requests"
check "v[0] == 400" "the server saw every request" "$(count_lines "$tmp/api.arrivals")"
check "v[0] == 400" "every request is a sample" "$(stat_json api 'd["samples_total"]')"
check "v[0] == 240" "every connection is counted" "$(stat_json api 'd["connects"]')"
