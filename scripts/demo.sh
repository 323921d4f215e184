#!/usr/bin/env bash
# scripts/demo.sh - the main job, end to end, in one command.
#
# Builds what is missing, starts local HTTP downstreams on 127.0.0.1 whose
# capacity drops from 150 to 40 requests per second a third of the way
# through and comes back to 150 two thirds of the way, and runs a real,
# unmodified client (ApacheBench, 16 connections in parallel) against them
# three times at once, each against its own downstream: as it is, through
# agilerun at a fixed 100 requests per second, and through agilerun with a
# 100 ms SLO (the default law).  While they go, agilestat shows the
# adaptive limiter; at the end a table compares what each downstream saw:
# requests served, the share inside the SLO and the goodput (answers
# inside the SLO per second).
#
# Usage: scripts/demo.sh [--seconds N]   (default 45; the runs take N s)
#   AGILE_BUILDDIR=DIR  use (and if needed build) that build directory
#                       instead of build/
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib-packages.sh
. "$top/scripts/lib-packages.sh"

seconds=45
while [ $# -gt 0 ]; do
	case "$1" in
	--seconds) seconds=$2; shift 2 ;;
	-h|--help) sed -n '2,17p' "$0"; exit 0 ;;
	*) echo "demo.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
drop=$((seconds / 3))
back=$((2 * seconds / 3))

need_packages 1 gcc make autoconf automake libtool pkg-config libbsd-dev \
	python3 apache2-utils

build=${AGILE_BUILDDIR:-$top/build}
if [ ! -x "$build/src/tools/agilerun" ] || [ ! -f "$build/preload/.libs/libagilepreload.so" ]; then
	# What the build prints (autoreconf's list of the files it installs,
	# configure's warning that Check, which only the tests need, is
	# missing) goes to a log, shown when the build fails.
	cd "$top"
	mkdir -p "$build"
	build=$(cd "$build" && pwd)
	log=$build/demo-build.log
	echo "== building (once; the log is $log)"
	if ! { { [ -x configure ] || autoreconf -fi; } &&
	       cd "$build" && { [ -f Makefile ] || "$top/configure" --quiet; } &&
	       make -j"$(nproc)"; } >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		echo "demo.sh: the build failed; its log is $log" >&2
		exit 1
	fi
fi
agilerun="$build/src/tools/agilerun"
agilestat="$build/src/tools/agilestat"

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_downstream PORT READY: capacity 150/s, 40/s from a third of the run,
# 150/s again from two thirds.
start_downstream() {
	rm -f "$2"
	python3 "$top/scripts/downstream.py" --port "$1" --base-ms 10 --slo-ms 100 \
		--schedule "0:150,$drop:40,$back:150" --lifetime $((seconds + 30)) \
		--ready-file "$2" &
	pids+=($!)
	for _ in $(seq 100); do [ -s "$2" ] && return 0; sleep 0.1; done
	echo "demo.sh: the downstream did not start" >&2
	exit 1
}

stats() { python3 -c 'import sys,urllib.request; print(urllib.request.urlopen("http://127.0.0.1:%s/stats" % sys.argv[1]).read().decode())' "$1"; }

field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

ab_run() { ab -q -t "$seconds" -n 10000000 -c 16 "http://127.0.0.1:$1/api"; }

echo "== ab -c 16 for ${seconds}s, three times at once, each against its own downstream"
echo "   (capacity 150/s, 40/s from ${drop}s, 150/s again from ${back}s; SLO 100 ms):"
echo "   no limiter; agilerun -d 'api=127.0.0.1:PORT floor=100 max=100' (fixed);"
echo "   agilerun -d 'api=127.0.0.1:PORT max=300 floor=5 slo=100ms' (the default)"
port1=$(free_port)
start_downstream "$port1" "$work/ready1"
port2=$(free_port)
start_downstream "$port2" "$work/ready2"
port3=$(free_port)
start_downstream "$port3" "$work/ready3"
state="$work/demo.state"
ab_run "$port1" >"$work/ab1.txt" 2>&1 &
ab1=$!
pids+=($ab1)
"$agilerun" -s "$work/fixed.state" -d "api=127.0.0.1:$port2 floor=100 max=100" -- \
	ab -q -t "$seconds" -n 10000000 -c 16 "http://127.0.0.1:$port2/api" >"$work/ab2.txt" 2>&1 &
ab2=$!
pids+=($ab2)
"$agilerun" -s "$state" -d "api=127.0.0.1:$port3 max=300 floor=5 slo=100ms" -- \
	ab -q -t "$seconds" -n 10000000 -c 16 "http://127.0.0.1:$port3/api" >"$work/ab3.txt" 2>&1 &
abpid=$!
pids+=($abpid)
for t in $(seq 5 5 "$seconds"); do
	sleep 5
	kill -0 "$abpid" 2>/dev/null || break
	echo "-- agilestat at ${t}s (the default)"
	"$agilestat" -s "$state" || true
done
wait "$abpid" || true
wait "$ab1" || true
wait "$ab2" || true
none=$(stats "$port1")
fixed=$(stats "$port2")
after=$(stats "$port3")
echo "-- agilestat at the end"
"$agilestat" -s "$state"

echo
echo "== what the downstreams saw (server-side latency, SLO 100 ms)"
printf '%-22s %10s %10s %12s %12s\n' "" requests "p99 ms" "inside SLO" "goodput/s"
for row in "without limiter:$none" "fixed 100/s:$fixed" "with agilepreload:$after"; do
	name=${row%%:*}
	json=${row#*:}
	python3 -c 'import json,sys
d = json.loads(sys.argv[2])
print("%-22s %10d %10.1f %11.1f%% %12.1f" % (sys.argv[1], d["count"], d["p99_ms"],
      100 * d["inside_slo"], d["count"] * d["inside_slo"] / float(sys.argv[3])))' \
		"$name" "$json" "$seconds"
done
samples=$("$agilestat" -s "$state" --json | python3 -c 'import json,sys; print(sum(d["samples_total"] for d in json.load(sys.stdin)["destinations"]))')
echo "agilestat recorded $samples round-trip samples"
[ "$samples" -gt 0 ]
