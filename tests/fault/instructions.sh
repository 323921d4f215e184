#!/bin/sh
# instructions.sh - what the preload adds to each paced request stays small.
#
# Timing belongs in scripts/bench-overhead, but the instructions the
# preload itself runs are counted exactly by callgrind, whatever else the
# machine does.  Two clients, each run once without the preload and once
# through a matched destination (ceiling far above the load); what the
# preload adds per request is the difference, over the requests, of the
# instructions run in the preload's own object, the C library and the
# loader (the preload's code and what it calls; start-up included):
#   redis-benchmark, 2 x 5,000 PINGs on 4 kept-alive connections
#     (pace=request): a grant, a round trip and a sample per request;
#   ab, 4,000 GETs at -c 16, a connection per request: also the socket,
#     the match, two connect() calls and the close.
# The program's own code is left out (scripts/callgrind-objects): its
# event loop turns a number of times that follows timing, and callgrind
# slows each run differently.  Two identical redis runs spent 29.9 and
# 28.2 million instructions in redis-benchmark itself, so the whole-program
# difference this test took before read 1,427 to 2,677 per request on one
# build and failed CI at 1,944 against its 1,800; the objects counted here
# moved by 10 a request between the same two runs (1,263 and 1,253), and
# read 2,623 for ab (ab's own code moves less: its whole-program count is
# within about 80 of this one), whose bound of 2,800 left too little room
# for the 40 a request the preload's own count moves between runs of ab
# (its waits and polls): 3,200 now.
# A change that put a formatted double on every grant (agile_bucket_validate
# writing out max_rate for a message it did not send: 2,500 instructions in
# printf) read 3,961 for redis by the whole-program count, against 1,225 to
# 1,402 without it.  The bounds leave room for the compiler and for honest
# features, not for work per request that no request needs.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need valgrind
need redis-server
need redis-benchmark
need ab
[ -z "${AGILE_TEST_PRELOAD_FIRST:-}" ] || skip "callgrind cannot run an ASan build"

start_redis
port=$redis_port

# total_ir NAME COMMAND... : the instructions COMMAND ran in the preload,
# the C library and the loader, under callgrind, with the variables of the
# preceding `env` arguments (see below).
total_ir() {
	name=$1
	shift
	"$@" >"$tmp/bench.$name" 2>"$tmp/err" ||
		fail "$name under callgrind: $(tail -n 5 "$tmp/err")"
	python3 "$srcdir/scripts/callgrind-objects" \
		--sum '/libagilepreload\.so|/libc\.so|/ld-linux' \
		"$tmp/callgrind.$name"
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
check "v[0] > 100 and v[0] < 3200" "ab: at most 3,200 instructions added per request" "$per"
