#!/bin/sh
# seed_knobs.sh - seed settings that had no key: an outbound adaptive cap's
# bounds (concurrency_min=, concurrency_initial=, concurrency_max=) and
# key_rate's burst.
#
# 16 Python threads make 6 requests each, on fresh connections, to a
# downstream that takes 50 ms per request, with concurrency=adaptive,
# law=aimd and concurrency_initial=3 concurrency_max=3: the server never
# sees more than 3 in service at once (adaptx's default bounds start at
# 10, which 16 threads would reach); agilestat --config shows the law's,
# the breaker's and retry's knobs the rule gives.  Then key_rate=1,burst=4 on a CIDR
# rule: 6 connects in a row to one address get 4 through (the default
# burst, the rate, would let 1 through) and the rest are refused.  Last,
# a listener's shed= and law= knobs as agilestat --config shows them.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

python3 "$SLOW_HTTPD" "$tmp/port" "$tmp/intervals" </dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")

export AGILE_DEST_API="127.0.0.1:$port max=1000 floor=1000 concurrency=adaptive,law=aimd concurrency_initial=3 concurrency_max=3 law_decrease=0.7 law_warmup=5 breaker=sre breaker_floor=1.2 breaker_probe=2s breaker_buckets=20 retry=2 retry_base=20ms retry_cap=200ms retry_factor=3 retry_jitter=full"
get_in_threads "$port" 16 6 || fail "the client failed"
peak=$(peak_in_service "$tmp/intervals")
note "concurrency_max=3: at most $peak in service at once, limit $(stat_json api 'd["concurrency"]["limit"]')"
check "v[0] == 96" "every request answered" "$(count_lines "$tmp/intervals")"
check "2 <= v[0] <= 3" "never more than concurrency_max=3 in service" "$peak"
"$AGILESTAT" --config >"$tmp/config" || fail "agilestat --config failed"
grep -q "concurrency adaptive: min=1 initial=3 max=3" "$tmp/config" ||
	fail "agilestat --config does not show the bounds: $(cat "$tmp/config")"
for want in "law aimd: .*law_decrease=0.7 .*law_warmup=5 " \
	"breaker sre: .*breaker_floor=1.2 .*breaker_probe=2s .*breaker_buckets=20" \
	"retry=2: retry_base=20ms retry_cap=200ms retry_factor=3 retry_jitter=full"; do
	grep -q "$want" "$tmp/config" ||
		fail "agilestat --config does not show \"$want\": $(cat "$tmp/config")"
done
unset AGILE_DEST_API

export AGILE_DEST_LOOP="127.0.0.0/8:$port max=1000 floor=1000 key_rate=1,burst=4"
set -- $(preloaded python3 - "$port" <<'PY'
import socket, sys
port = int(sys.argv[1])
ok = refused = 0
for n in range(6):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        ok += 1
    except ConnectionRefusedError:
        refused += 1
    s.close()
print(ok, refused)
PY
)
note "key_rate=1,burst=4: $1 connects through, $2 refused"
check "v[0] == 4 and v[1] == 2" "an address saves up a burst of 4" "$1" "$2"

# A listener's shedder and windowed law, as agilestat --config shows them
# once the server has answered one request.
rm -f "$tmp/port"
AGILE_LISTEN_WEB="127.0.0.1:* max=8 shed=cpu shed_window=2s shed_buckets=20 shed_latency=50ms shed_cool=3s shed_beta=0.5 shed_floor=0.2 law=vegas law_tolerance=0.3" \
	LD_PRELOAD="$PRELOAD" python3 "$SLOW_HTTPD" "$tmp/port" "$tmp/listen.intervals" \
	</dev/null >"$tmp/listen.log" 2>&1 &
listener=$!
started $listener
port=$(await_port "$tmp/port" "$tmp/listen.log")
python3 -c 'import sys, urllib.request
urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[1], timeout=10).read()' "$port" ||
	fail "the listener did not answer"
"$AGILESTAT" --config >"$tmp/config" || fail "agilestat --config failed"
kill "$listener"
wait "$listener" 2>/dev/null || true
for want in "shed cpu:900: shed_window=2s shed_buckets=20 shed_latency=50ms shed_cool=3s shed_beta=0.5 shed_floor=0.2" \
	"law vegas: .*law_tolerance=0.3 "; do
	grep -q "$want" "$tmp/config" ||
		fail "agilestat --config does not show \"$want\": $(cat "$tmp/config")"
done
note "agilestat --config shows a listener's shedder and law knobs"
