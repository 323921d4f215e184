#!/bin/sh
# serve_page.sh - agilestat --serve's live page, drawn by a real browser.
#
# A paced Python client runs under the preload while agilestat --serve
# listens on 127.0.0.1.  Debian's Chromium, headless with a fresh profile
# and every background service off, loads "/" and runs it for four seconds
# of virtual time (the page polls /json once a second): the DOM it dumps
# must name the destination and its address, show a rate above zero, and
# have drawn its plots from at least three points (the canvases'
# data-points); a second run saves a screenshot under the build directory
# (tests/tools/serve_page.png).  Chromium's net-log of both runs must name
# no URL but the server's own on 127.0.0.1: the page fetched nothing from
# anywhere else.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
. "$srcdir/tests/tools/lib_serve.sh"
need python3
need chromium

start_paced 60
start_serve
await_destination api
sleep 2 # a few ticks for /history, which the page reads first

# browse NAME ARG...: headless Chromium on the page, as the machine's
# closed network needs it (nothing of its own fetched), with a net-log.
browse() {
	name=$1
	shift
	rm -rf "$tmp/profile"
	timeout 60 chromium --headless --no-sandbox --disable-gpu \
		--disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync \
		--user-data-dir="$tmp/profile" --window-size=1200,760 \
		--virtual-time-budget=4000 --log-net-log="$tmp/$name.netlog" \
		--disable-features=NetworkTimeServiceQuerying \
		--host-resolver-rules='MAP * ~NOTFOUND, EXCLUDE 127.0.0.1' \
		"$@" "$serve_url" 2>"$tmp/$name.chromium.log" ||
		fail "chromium ($name) failed: $(tail -n 5 "$tmp/$name.chromium.log")"
}

browse dom --dump-dom >"$tmp/dom.html"
python3 - "$tmp/dom.html" "$api_port" <<'PY' || fail "the page did not show the destination: $(head -c 3000 "$tmp/dom.html")"
import html, re, sys
dom = open(sys.argv[1]).read()
text = html.unescape(re.sub(r"<[^>]+>", " ", dom))
polls = int((re.search(r'data-polls="(\d+)"', dom) or [0, 0])[1])
points = [int(p) for p in re.findall(r'<canvas class="(?:rate|latency)" [^>]*data-points="(\d+)"', dom)]
rate = re.search(r"rate ([0-9.]+)/s", text)
ok = (re.search(r"<h2>api</h2>", dom) and "127.0.0.1:%s" % sys.argv[2] in text
      and rate and float(rate.group(1)) > 0 and polls >= 3
      and len(points) == 2 and min(points) >= 3)
print("  page: %d polls, points drawn %s, %s" % (polls, points, rate and rate.group(0)))
sys.exit(0 if ok else 1)
PY

shot="$builddir/tests/tools/serve_page.png"
mkdir -p "${shot%/*}"
rm -f "$shot"
browse shot --screenshot="$shot" --hide-scrollbars
[ "$(wc -c <"$shot")" -gt 10000 ] || fail "no screenshot at $shot"
note "screenshot: $shot"

# What the net-logs say left the browser.  Chromium asks for things of its
# own even so (the component updater, the account list: requests whose
# initiator is "not an origin"); --host-resolver-rules keeps every name
# but 127.0.0.1 from resolving, so they cannot leave either.  The checks:
# every request of the page (any other initiator, and the navigation) is
# to the server; every TCP connection and every UDP datagram sent goes to
# 127.0.0.1.  A UDP socket's connect() sends nothing (Chromium connects one
# to a public address to learn whether IPv6 is routable), so it is not
# counted.
python3 - "$tmp/dom.netlog" "$tmp/shot.netlog" "$serve_url" <<'PY' || fail "Chromium made a request beyond 127.0.0.1"
import json, sys
from urllib.parse import urlsplit
own = urlsplit(sys.argv[3]).netloc
page, browser, bad = 0, 0, set()
def local(address):
    return address.startswith("127.0.0.1:")
for path in sys.argv[1:3]:
    text = open(path).read()
    if not text.rstrip().endswith("}"):
        text = text.rstrip().rstrip(",") + "]}"
    log = json.loads(text)
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    udp_remote = {}
    for e in log["events"]:
        t, p = types[e["type"]], e.get("params") or {}
        src = e["source"]["id"]
        if t == "URL_REQUEST_START_JOB" and "url" in p:
            if p.get("initiator") == "not an origin":
                browser += 1
            elif urlsplit(p["url"]).netloc == own:
                page += 1
            else:
                bad.add(p["url"])
        elif t in ("TCP_CONNECT", "TCP_CONNECT_ATTEMPT"):
            for a in p.get("address_list", []) + [p.get("address", "127.0.0.1:0")]:
                if not local(a):
                    bad.add("tcp " + a)
        elif t == "UDP_CONNECT":
            udp_remote[src] = p.get("address", "")
        elif t == "UDP_BYTES_SENT":
            a = p.get("address") or udp_remote.get(src, "")
            if not local(a):
                bad.add("udp " + a)
print("  net-log: %d requests of the page, all to %s; %d of Chromium's own, "
      "kept from resolving; elsewhere: %s" % (page, own, browser, sorted(bad) or "none"))
sys.exit(1 if bad or page < 4 else 0)
PY
