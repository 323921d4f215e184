#!/bin/sh
# serve_prometheus.sh - a real Prometheus scrapes agilestat --serve.
#
# A paced Python client runs under the preload while agilestat --serve
# listens on 127.0.0.1.  /metrics must pass `promtool check metrics`, and
# the OpenMetrics answer (which Prometheus asks for first) must name each
# counter's family without its _total and end with "# EOF".  Then Debian's
# Prometheus, on 127.0.0.1 with a one-second scrape of the server and
# nothing else, must give agile_rate and agile_connects_total for the
# destination back through its own HTTP query API: the metrics went the
# whole way, through a real parser and its storage.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
. "$srcdir/tests/tools/lib_serve.sh"
need python3
need curl
need prometheus
need promtool

start_paced 50
start_serve
await_destination api

curl -sf "${serve_url}metrics" >"$tmp/metrics" || fail "GET /metrics failed"
grep -q '^agile_rate{name="api",dest="127.0.0.1:' "$tmp/metrics" ||
	fail "/metrics has no agile_rate for api: $(head -n 20 "$tmp/metrics")"
promtool check metrics <"$tmp/metrics" >"$tmp/promtool.out" 2>&1 ||
	fail "promtool check metrics: $(cat "$tmp/promtool.out")"
note "promtool check metrics passes on /metrics ($(count_lines "$tmp/metrics") lines)"

curl -sf -D "$tmp/om.headers" \
	-H 'Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5' \
	"${serve_url}metrics" >"$tmp/om" || fail "GET /metrics (OpenMetrics) failed"
grep -qi '^content-type: application/openmetrics-text; version=1.0.0' "$tmp/om.headers" ||
	fail "OpenMetrics asked for, got: $(cat "$tmp/om.headers")"
[ "$(tail -n 1 "$tmp/om")" = "# EOF" ] || fail "the OpenMetrics answer does not end with # EOF"
grep -q '^# TYPE agile_connects counter$' "$tmp/om" &&
	grep -q '^agile_connects_total{name="api"' "$tmp/om" ||
	fail "OpenMetrics: agile_connects_total's family is not agile_connects"

prom_port=$(closed_port)
target=${serve_url#http://}
cat >"$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: agilestat
    static_configs:
      - targets: ["${target%/}"]
YML
prometheus --config.file="$tmp/prometheus.yml" \
	--storage.tsdb.path="$tmp/tsdb" \
	--web.listen-address="127.0.0.1:$prom_port" \
	--log.level=warn >"$tmp/prometheus.log" 2>&1 </dev/null &
started $!

# Prometheus's own answer for agile_rate and agile_connects_total, within
# 30 s (it starts, then scrapes every second).
python3 - "$prom_port" <<'PY' || fail "Prometheus never returned agile_rate: $(tail -n 20 "$tmp/prometheus.log")"
import json, sys, time, urllib.parse, urllib.request
port = int(sys.argv[1])
def query(q):
    url = "http://127.0.0.1:%d/api/v1/query?query=%s" % (port, urllib.parse.quote(q))
    try:
        d = json.load(urllib.request.urlopen(url, timeout=5))
    except Exception:
        return []
    return d["data"]["result"] if d.get("status") == "success" else []
for _ in range(300):
    rate = query('agile_rate{name="api"}')
    connects = query('agile_connects_total{name="api"}')
    if rate and connects and float(rate[0]["value"][1]) > 0:
        print("  Prometheus: agile_rate{name=\"api\"} = %s, agile_connects_total = %s"
              % (rate[0]["value"][1], connects[0]["value"][1]))
        up = query('up{job="agilestat"}')
        sys.exit(0 if up and up[0]["value"][1] == "1" else 1)
    time.sleep(0.1)
sys.exit(1)
PY
