#!/bin/sh
# downstream_killed.sh - the downstream dies with requests in flight: every
# client learns it at once, each request counts as truncated, none as a
# sample, and nothing hangs.
#
# The server accepts and reads requests and never answers.  Twelve requests
# go out under the preload: eight threads of the C client (blocking reads)
# and four Python threads (urllib).  Once the server has seen all twelve it
# is killed with SIGKILL; the kernel closes its connections, and every
# client must return within 2 s, failing as it would without the preload.
# The clients stamp when each request ended, and the kill is stamped just
# before it is sent: measured here after the clients' exits, the figure
# would hold two Python start-ups and a Python exit too (2.3 and 2.8 s
# seen on a loaded machine, with every request back in milliseconds).
# agilestat must then show twelve truncated requests and no sample (a
# connection cut short is no round trip).  A request to the dead port right
# after is refused at once and counted as unreachable.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fault/lib.sh"
need python3

port=$(start_server hold api)
export AGILE_DEST_API="127.0.0.1:$port max=200 floor=200 initial=200"
cat >"$tmp/client.py" <<'PY'
import sys, threading, time, urllib.request
url = "http://127.0.0.1:%s/" % sys.argv[1]
errors = []
ended = open(sys.argv[2], "a")
lock = threading.Lock()
def get():
    try:
        urllib.request.urlopen(url, timeout=60).read()
    except Exception as e:
        errors.append(e)
    with lock:
        ended.write("%.6f\n" % time.monotonic())
        ended.flush()
threads = [threading.Thread(target=get) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(len(errors))
PY
LD_PRELOAD="$PRELOAD" "$CLIENT" -t 8 -T "$tmp/ended" "$port" >"$tmp/c.out" 2>&1 &
c=$!
started $c
LD_PRELOAD="$PRELOAD" python3 "$tmp/client.py" "$port" "$tmp/ended" >"$tmp/py.out" 2>&1 &
py=$!
started $py
i=0
while [ "$(count_lines "$tmp/api.requests" 2>/dev/null || echo 0)" -lt 12 ]; do
	i=$((i + 1))
	[ "$i" -le 200 ] || fail "the server saw $(count_lines "$tmp/api.requests") requests, not 12"
	sleep 0.05
done
killed=$(python3 -c 'import os, sys, time
t = time.monotonic()
os.kill(int(sys.argv[1]), 9)
print("%.6f" % t)' "$(cat "$tmp/api.pid")")
status=0
wait "$c" || status=$?
check "v[0] == 1" "the C client reports its failed requests" "$status"
wait "$py" || fail "the Python client failed: $(cat "$tmp/py.out")"
check "v[0] == 4" "every Python request failed" "$(cat "$tmp/py.out")"
check "v[0] == 12" "every request's end was stamped" "$(count_lines "$tmp/ended")"
after=$(python3 -c 'import sys
print("%.3f" % (max(float(x) for x in open(sys.argv[1])) - float(sys.argv[2])))' \
	"$tmp/ended" "$killed")
note "every request ended $after s after the kill ($(cat "$tmp/c.out"))"
check "v[0] < 2" "no client hangs" "$after"
check "v[0] == 12" "every request in flight is truncated" \
	"$(stat_json api 'd["truncated"]')"
check "v[0] == 0" "no truncated request is a sample" \
	"$(stat_json api 'd["samples_total"]')"

status=0
LD_PRELOAD="$PRELOAD" "$CLIENT" "$port" >/dev/null 2>&1 || status=$?
check "v[0] == 1" "a request to the dead port fails" "$status"
check "v[0] >= 1" "and is counted unreachable" "$(stat_json api 'd["unreachable"]')"
