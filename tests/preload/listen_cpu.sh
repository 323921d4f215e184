#!/bin/sh
# listen_cpu.sh - shed=cpu sheds a listener's connections only when the
# server's CPU is hot and its work in flight exceeds what it has shown it
# can finish.
#
# The listener's adaptive cap is pinned out of the way (floor = initial =
# max = 1024), so only libagile's CPU-aware shedder can shed.  A Python
# server pinned to one CPU burns 5 ms of CPU per request under ab -c 32: its
# process uses all of the one CPU it may use (the preload counts the
# affinity mask and the cgroup v2 cpu.max quota), and 32 requests in flight
# exceed what it finishes in one response time, so connections are shed
# (answered 503) by the CPU shedder.  The same ab against a server that
# sleeps 20 ms per request instead keeps as many in flight but leaves the
# CPU cool: nothing is shed.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
need ab
need taskset
[ "$(nproc)" -ge 2 ] || skip "needs two CPUs (the server and ab on their own)"

cat >"$tmp/server.py" <<'PY'
import http.server, sys, time
from httpd import Quiet, serve
port_file, burn = sys.argv[1], sys.argv[2] == "burn"
class Handler(Quiet):
    protocol_version = "HTTP/1.0"
    def do_GET(self):
        if burn:
            end = time.thread_time() + 0.005
            while time.thread_time() < end:
                pass
        else:
            time.sleep(0.02)
        self.ok()
serve(Handler, port_file)
PY

# cpu_seconds PID: "CPU WALL", the process's CPU time (user and system)
# and the monotonic time, in seconds; cpu_seconds PID "CPU WALL": the share
# of one CPU it has used since that reading.
cpu_seconds() {
	python3 - "$1" "${2:-}" <<'PY'
import os, sys, time
fields = open("/proc/%s/stat" % sys.argv[1]).read().rsplit(")", 1)[1].split()
cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
now = time.monotonic()
if sys.argv[2]:
    c0, w0 = map(float, sys.argv[2].split())
    print("%.3f" % ((cpu - c0) / (now - w0)))
else:
    print("%.3f %.6f" % (cpu, now))
PY
}

# run NAME burn|sleep: the server behind the listener rule NAME, under ab;
# the share of its CPU the server used under ab goes to $tmp/NAME.cpu.
run() {
	rm -f "$tmp/port"
	env "AGILE_LISTEN_$1=127.0.0.1:* max=1024 floor=1024 initial=1024 shed=cpu shed_response=503" \
		LD_PRELOAD="$PRELOAD" taskset -c 1 python3 "$tmp/server.py" \
		"$tmp/port" "$2" </dev/null >"$tmp/$1.server" 2>&1 &
	pid=$!
	started $pid
	port=$(await_port "$tmp/port" "$tmp/$1.server")
	before=$(cpu_seconds "$pid")
	taskset -c 0 ab -q -r -s 10 -c 32 -t 3 -n 1000000 \
		"http://127.0.0.1:$port/" >"$tmp/$1.ab" 2>&1 ||
		fail "ab failed: $(tail -3 "$tmp/$1.ab")"
	cpu_seconds "$pid" "$before" >"$tmp/$1.cpu"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}

# The CPU shedder reads the server's own CPU time: on a machine busy with
# other programs CPU 1 is shared, and a server that gets less than the
# shedder's 90% of it is not hot, however starved (0 sheds seen under CI's
# parallel make check, and in all three tries on two cores loaded four
# times over; a run that shed used 0.41 of the CPU over its 3 s).
# So the hot run gets up to three tries, and one in which the server used
# 90% of its CPU must have shed; when none got there, the shedder was not
# tested, and the test says so and is skipped rather than passed.  The
# cool run must shed nothing on its only try.
hot="" best=0
for attempt in hot hot2 hot3; do
	run "$attempt" burn
	share=$(cat "$tmp/$attempt.cpu")
	note "$attempt: the server used $share of its CPU"
	if [ "$(stat_json "$attempt" 'd["listener"]["shed_cpu"]')" -gt 0 ]; then
		hot=$attempt
		break
	fi
	check "v[0] < 0.9" "a server that used 90% of its CPU under ab is shed for" "$share"
	best=$(python3 -c 'import sys; print(max(map(float, sys.argv[1:])))' "$best" "$share")
done
[ -n "$hot" ] || skip "in three runs the server never got 90% of its CPU (best $best): the machine is too busy to test shed=cpu"
run cool sleep
hot_cpu=$(stat_json "$hot" 'd["listener"]["shed_cpu"]')
hot_shed=$(stat_json "$hot" 'd["listener"]["shed"]')
cool_cpu=$(stat_json cool 'd["listener"]["shed_cpu"]')
note "CPU-bound server: $hot_shed shed, $hot_cpu of them by the CPU shedder"
note "sleeping server: $cool_cpu shed by the CPU shedder"
check "v[0] > 0" "a hot, full server sheds" "$hot_cpu"
check "v[0] == v[1]" "every shed was the CPU shedder's (the cap is out of the way)" \
	"$hot_cpu" "$hot_shed"
check "v[0] == 0" "a cool server sheds nothing, however much is in flight" "$cool_cpu"
check "v[0] > 0" "ab got the 503s" \
	"$(sed -n 's/^Non-2xx responses: *//p' "$tmp/$hot.ab" | grep . || echo 0)"
