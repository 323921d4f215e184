#!/bin/sh
# agilestat.sh - every agilestat output, on a state file the preload wrote.
#
# A Python client keeps one connection to the server open: it makes ten
# requests at floor=max=20/s with tick=100ms, then idles with the
# connection open while agilestat looks.  The table must name the
# destination and warn BLIND (a live process, no tick for several ticks: its
# rate is frozen, not steady) and list the client among the live
# processes; --json must carry the documented keys; --prometheus a HELP and
# a TYPE line for every metric and a sample per destination; --history a CSV
# header and one row per tick; --config the resolved configuration; --watch
# must redraw in place with sparklines; two output formats at once are
# refused.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=20 floor=20 tick=100ms"
LD_PRELOAD="$PRELOAD" python3 - "$port" "$tmp/ready" <<'PY' &
import http.client, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
for i in range(10):
    c.request("GET", "/")
    c.getresponse().read()
open(sys.argv[2], "w").close()
time.sleep(20)
PY
client=$!
started $client
i=0
while [ ! -e "$tmp/ready" ]; do
	i=$((i + 1)); [ "$i" -le 200 ] || fail "the client did not finish its requests"
	sleep 0.05
done
sleep 0.6 # six ticks' worth without a call

"$AGILESTAT" >"$tmp/table" || fail "agilestat failed"
cat "$tmp/table"
grep -q "^api  127.0.0.1:$port  pace=request  live processes 1 ($client)" "$tmp/table" ||
	fail "table: no live client line"
grep -q "BLIND" "$tmp/table" || fail "table: an idle live process is not reported blind"
# Without an slo the tail guard is off: the table says so instead of the
# ratio guard's "0.000 / 0.000", which read as a guard in force.
grep -q "total  tail guard off (no slo)$" "$tmp/table" ||
	fail "table: the tail guard without an slo is not shown as off"

# Two output formats, --watch with one, or a stray argument: refused with
# status 2 and a line that says why, rather than the last one silently
# winning.
for args in "--json --prometheus" "--watch 1 --json" "json"; do
	status=0
	# shellcheck disable=SC2086 # the words are the options
	"$AGILESTAT" $args >"$tmp/out" 2>"$tmp/err" || status=$?
	[ "$status" -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q "^agilestat: " "$tmp/err" ||
		fail "agilestat $args: status $status, stderr: $(cat "$tmp/err")"
done

"$AGILESTAT" --json >"$tmp/json" || fail "agilestat --json failed"
python3 - "$tmp/json" <<'PY' || fail "--json lacks documented keys: $(cat "$tmp/json")"
import json, sys
d = json.load(open(sys.argv[1]))["destinations"][0]
keys = ["name", "dest", "rate", "used", "p50_ms", "p99_ms", "baseline_ms",
        "samples", "samples_total", "grants_total", "connects",
        "unreachable", "truncated",
        "fast_ms", "tail_ratio", "tail_threshold", "cold_start",
        "live_processes", "blind"]
missing = [k for k in keys if k not in d]
print("  json keys missing:", missing, "samples_total", d["samples_total"],
      "grants_total", d["grants_total"], "blind", d["blind"])
sys.exit(1 if missing or d["samples_total"] != 10 or
         d["grants_total"] != 10 or not d["blind"] else 0)
PY

"$AGILESTAT" --prometheus >"$tmp/prom" || fail "agilestat --prometheus failed"
python3 - "$tmp/prom" <<'PY' || fail "--prometheus is malformed"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
helps = {l.split()[2] for l in lines if l.startswith("# HELP ")}
types = {l.split()[2] for l in lines if l.startswith("# TYPE ")}
samples = [l for l in lines if not l.startswith("#")]
names = {re.match(r"([a-z0-9_]+)\{", l).group(1) for l in samples}
ok = helps == types == names and len(samples) == len(names) and all(
    re.match(r'^[a-z0-9_]+\{name="api",dest="[^"]+"\} [-0-9.e+]+$', l) for l in samples)
print("  prometheus: %d metrics, every one with HELP and TYPE: %s" % (len(names), ok))
sys.exit(0 if ok and "agile_samples_total" in names else 1)
PY

"$AGILESTAT" --history >"$tmp/history" || fail "agilestat --history failed"
head -n 1 "$tmp/history" | grep -q '^name,unix_time,rate,used,p50_ms,p99_ms,samples,unreachable,truncated$' ||
	fail "--history header: $(head -n 1 "$tmp/history")"
check "v[0] >= 2" "--history has a row per tick" "$(($(count_lines "$tmp/history") - 1))"

"$AGILESTAT" --config >"$tmp/config" || fail "agilestat --config failed"
grep -q "max_rate: 20" "$tmp/config" && grep -q "floor_rate: 20" "$tmp/config" &&
	grep -q "tick: 100ms" "$tmp/config" || fail "--config: $(cat "$tmp/config")"

timeout 2.5 "$AGILESTAT" --watch 1 >"$tmp/watch" 2>&1 || true
check "v[0] >= 2" "--watch redraws in place" "$(grep -c "$(printf '\033')\[2J" "$tmp/watch")"
grep -q "rate " "$tmp/watch" && grep -q "$(printf '\342\226')" "$tmp/watch" ||
	fail "--watch draws no sparkline"
kill "$client" 2>/dev/null || true
