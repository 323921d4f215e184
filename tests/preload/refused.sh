#!/bin/sh
# refused.sh - a refused port is an outage, never a fast sample.
#
# curl is pointed at a port nothing listens on, again and again (until the
# rate reaches the probe floor, or for at most 60 seconds: the walk down
# takes a dozen attempts, and on a loaded machine an attempt and the
# agilestat read after it took over a second, so 10 s ran out at 1.15/s
# after 9 of them).  Every attempt is refused: each must count as unreachable
# (none as a sample).  With an SLO there is an anchor for a synthetic slow
# sample, so the controller must walk the rate down to the probe floor
# (1/s), never above its start (20/s).  Without an SLO, and with no sample
# ever seen, there is nothing honest to anchor a back-off to: the rate must
# hold at its start.  The pacing also holds for failures: the attempts
# against the refused port run no faster than the rate allows.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need curl

port=$(closed_port)

hammer() { # seconds [stop when the rate reaches this]
	end=$(( $(date +%s) + $1 ))
	i=0
	while [ "$(date +%s)" -lt "$end" ] && [ "$i" -lt 400 ]; do
		preloaded curl -s -o /dev/null "http://127.0.0.1:$port/" && fail "connected to a closed port"
		i=$((i + 1))
		if [ -n "${2:-}" ] && [ "$(stat_json down "round(d['rate'], 6) == $2")" = True ]; then
			break
		fi
	done
	echo "$i"
}

export AGILE_DEST_DOWN="127.0.0.1:$port max=50 floor=10 probe=1 initial=20 slo=100ms tick=100ms"
attempts=$(hammer 60 1)
"$AGILESTAT" --history >"$tmp/with-slo.csv"
unreachable=$(stat_json down 'd["unreachable"]')
samples=$(stat_json down 'd["samples_total"]')
final=$(stat_json down 'd["rate"]')
highest=$(python3 -c 'import csv,sys; print(max(float(r["rate"]) for r in csv.DictReader(open(sys.argv[1]))))' "$tmp/with-slo.csv")
note "with slo: $attempts attempts, $unreachable unreachable, $samples samples, rate now $final, highest $highest"
check "v[0] == v[1]" "every attempt counted unreachable" "$unreachable" "$attempts"
check "v[0] == 0" "no refused attempt is a sample" "$samples"
check "v[0] <= 20" "the rate never rose above its start" "$highest"
check "abs(v[0] - 1) < 1e-6" "the rate fell to the probe floor" "$final"
# Paced failures: at 14/s and falling by 30% per attempt, the walk down to
# 1/s takes a dozen attempts; unpaced, curl makes hundreds in that time.
check "v[0] <= 30" "refused attempts are paced too" "$attempts"

rm -f "$AGILE_STATE"
export AGILE_DEST_DOWN="127.0.0.1:$port max=50 floor=10 probe=1 initial=20 tick=100ms"
attempts=$(hammer 2)
"$AGILESTAT" --history >"$tmp/no-slo.csv"
python3 - "$tmp/no-slo.csv" <<'PY' || fail "without an SLO the rate must hold at 20"
import csv, sys
rates = [float(r["rate"]) for r in csv.DictReader(open(sys.argv[1]))]
print("  rates without slo:", sorted(set(rates)), "over", len(rates), "ticks")
sys.exit(0 if rates and all(abs(r - 20) < 1e-6 for r in rates) else 1)
PY
note "without slo: $attempts attempts, rate held at $(stat_json down 'd["rate"]')"
