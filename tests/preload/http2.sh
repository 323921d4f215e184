#!/bin/sh
# http2.sh - the frames that keep an HTTP/2 connection are no requests.
#
# nghttp2's clients (h2load, nghttp, curl) send a GOAWAY frame on its own
# before they close the connection, and the server answers nothing.  It
# was taken for a request: it waited for a grant and was recorded as
# truncated at the close, one per connection (h2load -n 60 -c 2 -m 1
# against nghttpd at 20/s: 62 grants and 2 truncated; nghttp, three
# connections of one request each: 6 grants and 3 truncated).  And the
# server's SETTINGS, which nghttpd sends as soon as it accepts, read on its
# own, ended the first request's round trip, and the client's SETTINGS
# acknowledgement was a request of its own (nghttp: now and then 4 samples
# and 4 grants for 3 requests).  On a connection whose client sent the
# HTTP/2 preface, sends of SETTINGS, PING, WINDOW_UPDATE, PRIORITY,
# RST_STREAM and GOAWAY frames only are no requests, and reads of SETTINGS,
# PING, WINDOW_UPDATE and PRIORITY frames only answer none
# (src/common/http2.c).  h2load, one stream at a time on each of two
# connections, and nghttp three times, against nghttpd without TLS, at
# floor=max=20/s with breaker=sre: one grant and one sample per request,
# nothing truncated, no breaker failure.  (curl --http2-prior-knowledge
# fails against nghttpd on its second request on a connection, preload or
# not: "Error in the HTTP2 framing layer".)
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need h2load
start_nghttpd
port=$nghttpd_port
export AGILE_DEST_H2="127.0.0.1:$port max=20 floor=20 initial=20 breaker=sre"

# counts LABEL REQUESTS CONNECTIONS: one grant and one sample per request,
# nothing truncated and no breaker failure, one connect per connection.
counts() {
	# shellcheck disable=SC2046
	set -- "$@" $(stat_json h2 \
		'"%d %d %d %d %d" % (d["samples_total"], d["grants_total"], d["truncated"], d["connects"], d["breaker"]["failures"])')
	note "$1: $2 requests on $3 connections: $4 samples, $5 grants, $6 truncated, $8 breaker failures"
	check "v[0] == $2" "$1: one sample per request" "$4"
	check "v[0] == $2" "$1: one grant per request" "$5"
	check "v[0] == 0" "$1: the GOAWAY is not truncated" "$6"
	check "v[0] == $3" "$1: every connection counted" "$7"
	check "v[0] == 0" "$1: no breaker failure" "$8"
}

rm -f "$AGILE_STATE"
preloaded h2load -n 60 -c 2 -m 1 "http://127.0.0.1:$port/index.html" \
	>"$tmp/h2load.out" 2>&1 || fail "h2load failed: $(cat "$tmp/h2load.out")"
grep -q '60 succeeded' "$tmp/h2load.out" || fail "h2load: $(cat "$tmp/h2load.out")"
counts "h2load -m 1" 60 2

rm -f "$AGILE_STATE"
for i in 1 2 3; do
	preloaded nghttp -n "http://127.0.0.1:$port/index.html" \
		>"$tmp/nghttp.out" 2>&1 || fail "nghttp failed: $(cat "$tmp/nghttp.out")"
done
counts "nghttp, a connection per request" 3 3
