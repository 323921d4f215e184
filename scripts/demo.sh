#!/usr/bin/env bash
# scripts/demo.sh - the main job, end to end, in one command.
#
# Builds what is missing, starts a local HTTP downstream on 127.0.0.1 whose
# capacity drops from 150 to 40 requests per second half way through, and
# runs a real, unmodified client (ApacheBench, 16 connections in parallel)
# against it twice: once as it is, and once through agilerun with a 100 ms
# SLO.  While the throttled run goes, agilestat shows the limiter; at the end
# a short table compares what the downstream saw in both runs.
#
# Usage: scripts/demo.sh [--seconds N]   (default 30; each run takes N s)
#   AGILE_BUILDDIR=DIR  use (and if needed build) that build directory
#                       instead of build/
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib-packages.sh
. "$top/scripts/lib-packages.sh"

seconds=30
while [ $# -gt 0 ]; do
	case "$1" in
	--seconds) seconds=$2; shift 2 ;;
	-h|--help) sed -n '2,13p' "$0"; exit 0 ;;
	*) echo "demo.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
half=$((seconds / 2))

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

# start_downstream PORT: capacity 150/s, then 40/s after half the run.
start_downstream() {
	rm -f "$work/ready"
	python3 "$top/scripts/downstream.py" --port "$1" --base-ms 10 --slo-ms 100 \
		--schedule "0:150,$half:40" --lifetime $((seconds + 30)) \
		--ready-file "$work/ready" &
	pids+=($!)
	for _ in $(seq 100); do [ -s "$work/ready" ] && return 0; sleep 0.1; done
	echo "demo.sh: the downstream did not start" >&2
	exit 1
}

stats() { python3 -c 'import sys,urllib.request; print(urllib.request.urlopen("http://127.0.0.1:%s/stats" % sys.argv[1]).read().decode())' "$1"; }

field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

echo "== run 1: ab -c 16 for ${seconds}s, no limiter (capacity 150/s, then 40/s at ${half}s)"
port=$(free_port)
start_downstream "$port"
ab -q -t "$seconds" -n 10000000 -c 16 "http://127.0.0.1:$port/api" >"$work/ab1.txt" 2>&1 || true
before=$(stats "$port")
kill "${pids[-1]}" 2>/dev/null || true

echo "== run 2: the same, through agilerun -d 'api=127.0.0.1:PORT max=300 floor=5 slo=100ms'"
port=$(free_port)
start_downstream "$port"
state="$work/demo.state"
"$agilerun" -s "$state" -d "api=127.0.0.1:$port max=300 floor=5 slo=100ms" -- \
	ab -q -t "$seconds" -n 10000000 -c 16 "http://127.0.0.1:$port/api" >"$work/ab2.txt" 2>&1 &
abpid=$!
pids+=($abpid)
for t in $(seq 5 5 "$seconds"); do
	sleep 5
	kill -0 "$abpid" 2>/dev/null || break
	echo "-- agilestat at ${t}s"
	"$agilestat" -s "$state" || true
done
wait "$abpid" || true
after=$(stats "$port")
echo "-- agilestat at the end"
"$agilestat" -s "$state"

echo
echo "== what the downstream saw (server-side latency, SLO 100 ms)"
printf '%-22s %10s %10s %10s %12s\n' "" requests "p50 ms" "p99 ms" "inside SLO"
for row in "without limiter:$before" "with agilepreload:$after"; do
	name=${row%%:*}
	json=${row#*:}
	printf '%-22s %10s %10s %10s %11.1f%%\n' "$name" "$(field "$json" count)" \
		"$(field "$json" p50_ms)" "$(field "$json" p99_ms)" \
		"$(python3 -c 'import sys; print(float(sys.argv[1])*100)' "$(field "$json" inside_slo)")"
done
samples=$("$agilestat" -s "$state" --json | python3 -c 'import json,sys; print(sum(d["samples_total"] for d in json.load(sys.stdin)["destinations"]))')
echo "agilestat recorded $samples round-trip samples"
[ "$samples" -gt 0 ]
