#!/bin/sh
# bash_tcp.sh - bash's /dev/tcp redirections are paced.
#
# `echo … >/dev/tcp/HOST/PORT` is bash connecting a socket, dup2()ing it
# onto 1, writing through stdio's stdout (inside libc, where no hook sees
# the write) and closing it: the grant the connect took was never waited
# for, and at floor=max=5 twenty such connections took 0.1 s.  The preload
# now waits for a pending grant when a socket is duplicated onto 0, 1 or 2.
# Here bash sends 10 requests that way at floor=max=10: they must take at
# least 0.8 s (0.9 s nominal; measured 0.92 s on an idle machine), with no
# calendar second at the server above the ceiling +1, every one a connect.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
need bash

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=10 floor=10 initial=10"
# shellcheck disable=SC2016 # expanded by bash, not here
elapsed=$(preloaded bash -c '
	start=$(date +%s%N)
	for i in 1 2 3 4 5 6 7 8 9 10; do
		printf "GET /bash HTTP/1.0\r\n\r\n" >"/dev/tcp/127.0.0.1/$1"
	done
	echo $((($(date +%s%N) - start) / 1000000))' bash "$port") ||
	fail "bash failed"
note "10 requests through >/dev/tcp in $elapsed ms at max=10"
check "v[0] >= 800" "bash's connections are paced" "$elapsed"
i=0
while [ "$(count_lines "$tmp/api.arrivals")" -lt 10 ]; do
	i=$((i + 1))
	[ "$i" -le 100 ] || fail "the server saw $(count_lines "$tmp/api.arrivals") requests, not 10"
	sleep 0.05
done
most=$(python3 - "$tmp/api.arrivals" <<'PY'
import collections, sys
t = [float(x) for x in open(sys.argv[1]) if x.strip()]
print(max(collections.Counter(int(x) for x in t).values()))
PY
)
check "v[0] <= 11" "no second at the server above the ceiling +1" "$most"
check "v[0] == 10" "one connect per redirection" "$(stat_json api 'd["connects"]')"
