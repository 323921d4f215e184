#!/bin/sh
# instructions.sh - what the preload adds to each paced request stays small.
#
# Timing belongs in scripts/bench-overhead, but the instructions the
# preload itself runs are counted exactly by callgrind, whatever else the
# machine does.  Two clients, each run once without the preload and once
# through a matched destination (ceiling far above the load); the
# difference of the two whole-program totals (the preload's code, the C
# library it calls, start-up included), divided by the requests, is what
# the preload adds per request:
#   redis-benchmark, 2 x 5,000 PINGs on 4 kept-alive connections
#     (pace=request): a grant, a round trip and a sample per request;
#   ab, 4,000 GETs at -c 16, a connection per request: also the socket,
#     the match, two connect() calls and the close.
# A change that put a formatted double on every grant (agile_bucket_validate
# writing out max_rate for a message it did not send: 2,500 instructions in
# printf) read 3,961 for redis, against 1,225 to 1,402 without it; link-
# time optimisation and inline fast paths (f5f9dcc) brought redis to 871-
# 1,043 and ab to 1,937-2,021 (two builds of the same sources, in and out
# of the tree, inline a little differently).  The bounds leave room for
# the compiler and for honest features, not for work per request that no
# request needs.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need valgrind
need callgrind_annotate
need redis-server
need redis-benchmark
need ab
[ -z "${AGILE_TEST_PRELOAD_FIRST:-}" ] || skip "callgrind cannot run an ASan build"

start_redis
port=$redis_port

# total_ir NAME COMMAND... : callgrind's whole-program total for COMMAND,
# run with the variables of the preceding `env` arguments (see below).
total_ir() {
	name=$1
	shift
	"$@" >"$tmp/bench.$name" 2>"$tmp/err" ||
		fail "$name under callgrind: $(tail -n 5 "$tmp/err")"
	callgrind_annotate "$tmp/callgrind.$name" |
		awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}
# grind NAME: valgrind's command line for a run called NAME.
grind() {
	echo valgrind --tool=callgrind --callgrind-out-file="$tmp/callgrind.$1"
}

# per_request NONE MATCHED REQUESTS: the difference per request, rounded.
per_request() {
	python3 -c 'import sys; print("%.0f" % ((int(sys.argv[2]) - int(sys.argv[1])) / int(sys.argv[3])))' "$@"
}

redis="redis-benchmark -p $port -c 4 -n 5000 -t ping -q"
none=$(total_ir redis.none $(grind redis.none) $redis)
matched=$(total_ir redis.matched env LD_PRELOAD="$PRELOAD" \
	AGILE_DEST_REDIS="127.0.0.1:$port max=1000000 initial=1000000 pace=request" \
	$(grind redis.matched) $redis)
check "v[0] >= 10000" "every request is a sample (and the benchmark's own CONFIG GET)" \
	"$(stat_json redis 'd["samples_total"]')"
per=$(per_request "$none" "$matched" 10000)
note "redis: instructions per request added by the preload: $per ($none without it, $matched with it, for 10,000 requests)"
check "v[0] > 100 and v[0] < 1800" "redis: at most 1,800 instructions added per request" "$per"

http_port=$(start_httpd api)
ab="ab -q -n 4000 -c 16 http://127.0.0.1:$http_port/"
none=$(total_ir ab.none $(grind ab.none) $ab)
matched=$(total_ir ab.matched env LD_PRELOAD="$PRELOAD" \
	AGILE_DEST_API="127.0.0.1:$http_port max=1000000 initial=1000000" \
	$(grind ab.matched) $ab)
check "v[0] >= 4000" "every connection is paced" "$(stat_json api 'd["connects"]')"
check "v[0] >= 4000" "every request is a sample" "$(stat_json api 'd["samples_total"]')"
per=$(per_request "$none" "$matched" 4000)
note "ab: instructions per request added by the preload: $per ($none without it, $matched with it, for 4,000 requests)"
check "v[0] > 100 and v[0] < 2800" "ab: at most 2,800 instructions added per request" "$per"
