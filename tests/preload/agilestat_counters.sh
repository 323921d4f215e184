#!/bin/sh
# agilestat_counters.sh - --prometheus writes counters exactly and gauges
# at full precision.
#
# agilestat wrote every Prometheus value as a double with "%.9g": a
# counter past a billion lost its last digits (1,099,511,627,783
# connections read 1.09951163e+12, and a scrape saw the counter stand
# still while it grew), and a gauge such as max=987654321.25 read
# 987654321.  A state file the preload wrote for one request, with
# retry=1 so the connect feature's counters are shown too, has its
# connection, unreachable, truncated and connect-retry counters set to
# 2^40 + 7, 2^53 + 1 (no double holds it), 2^64 - 1 and 2^60 + 1 at their
# offsets in the format (tests/common/check_state_layout.c); --prometheus
# must print each as that whole number, and the configured max as
# 987654321.25.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=987654321.25 floor=20 retry=1"
preloaded python3 - "$port" <<'PY' || fail "the client failed"
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
c.request("GET", "/")
assert c.getresponse().read() == b"ok\n"
PY

# The destination's slot is the one named "api" (a slot's name at 16);
# its counters sit at 200, 208 and 216, the resilience region at 8064 and
# its connect_retries at 320 in it.
python3 - "$AGILE_STATE" <<'PY' || fail "cannot patch the state file"
import struct, sys
with open(sys.argv[1], "r+b") as f:
    data = bytearray(f.read())
    header_size, slot_size, slots = struct.unpack_from("<III", data, 12)
    slot = next(header_size + i * slot_size for i in range(slots)
                if data[header_size + i * slot_size + 16:][:4] == b"api\0")
    for offset, value in ((200, 2**40 + 7), (208, 2**53 + 1),
                          (216, 2**64 - 1), (8064 + 320, 2**60 + 1)):
        struct.pack_into("<Q", data, slot + offset, value)
    f.seek(0)
    f.write(data)
PY

"$AGILESTAT" --prometheus >"$tmp/prom" || fail "agilestat --prometheus failed"
for want in \
	"agile_connects_total $((1 << 40 | 7))" \
	"agile_unreachable_total 9007199254740993" \
	"agile_truncated_total 18446744073709551615" \
	"agile_connect_retries_total $((1 << 60 | 1))" \
	"agile_max_rate 987654321.25"; do
	got=$(sed -n "s/^${want% *}{name=\"api\",dest=\"[^\"]*\"} //p" "$tmp/prom")
	note "${want% *}: $got"
	[ "$got" = "${want#* }" ] || fail "${want% *} is $got, not ${want#* }"
done
# Every value is still one the text format reads.
grep -v '^#' "$tmp/prom" | grep -Eqv '\} (-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?|NaN|[-+]Inf)$' &&
	fail "a value the text format does not read: $(grep -v '^#' "$tmp/prom" | grep -Ev '\} (-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?|NaN|[-+]Inf)$')"
exit 0
