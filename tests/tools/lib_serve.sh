# lib_serve.sh - what the tests of agilestat --serve share (sourced after
# tests/preload/lib.sh): a paced program to watch, and the server.

# start_paced SECONDS: the HTTP downstream "api" and a Python client under
# the preload requesting from it on one keep-alive connection for SECONDS
# (at most; cleanup stops it sooner), paced at max=40/s with a 50 ms SLO.
# Each request it completes is a line in $tmp/paced.done.  Sets api_port.
start_paced() {
	api_port=$(start_httpd api)
	export AGILE_DEST_API="127.0.0.1:$api_port max=40 slo=50ms tick=100ms"
	LD_PRELOAD="$PRELOAD" python3 - "$api_port" "$1" "$tmp/paced.done" <<'PY' &
import http.client, sys, time
port, seconds, done = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
out = open(done, "w", buffering=1)
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
end = time.monotonic() + seconds
while time.monotonic() < end:
    c.request("GET", "/")
    c.getresponse().read()
    out.write("%.6f\n" % time.monotonic())
PY
	started $!
	await_file "$tmp/paced.done" "the paced client made no request"
}

# start_serve [ADDRESS]: agilestat --serve on ADDRESS (127.0.0.1:0, a port
# of its choosing, by default); sets serve_url to the http:// address it
# prints, or to unix:PATH.
start_serve() {
	"$AGILESTAT" --serve "${1:-127.0.0.1:0}" >"$tmp/serve.out" \
		2>"$tmp/serve.err" </dev/null &
	serve_pid=$!
	started $serve_pid
	await_file "$tmp/serve.out" "agilestat --serve did not start" \
		"$tmp/serve.err"
	serve_url=$(sed -n 's/^agilestat: serving .* on //p' "$tmp/serve.out")
	[ -n "$serve_url" ] || fail "agilestat --serve printed: $(cat "$tmp/serve.out")"
}

# await_destination NAME: wait up to 10 s for /json to show NAME with a
# rate above zero.
await_destination() {
	python3 - "$serve_url" "$1" <<'PY' || fail "/json never showed $1 with a rate"
import json, sys, time, urllib.request
url, name = sys.argv[1], sys.argv[2]
for _ in range(100):
    d = json.load(urllib.request.urlopen(url + "json", timeout=5))
    if any(x["name"] == name and x["rate"] > 0 for x in d["destinations"]):
        sys.exit(0)
    time.sleep(0.1)
sys.exit(1)
PY
}
