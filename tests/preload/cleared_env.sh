#!/bin/sh
# cleared_env.sh - a program that empties its environment before it
# connects is still throttled.
#
# The preload reads its configuration at the first connect.  nginx gives its
# worker processes only the variables its `env` directive names, so the
# AGILE_ variables were gone by the time a worker connected to its upstream:
# nginx proxying ab's 100 keep-alive requests at max=20 passed all 100 to
# the upstream in 55 ms, unthrottled and without a word.  The constructor
# now keeps a copy of the AGILE_ variables the process started with, read
# when the environment has none left.  Python's os.environ.clear() (which
# unsets every variable) stands in for nginx, which runs too where it is
# installed: the upstream must see 20/s within 15% (measured: 19.9/s) and
# no second above 20 plus slack.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=20 floor=20 initial=20"
preloaded python3 - "$port" <<'PY' || fail "the client failed"
import os, sys, urllib.request
port = sys.argv[1]
os.environ.clear()
assert not any(k.startswith("AGILE_") for k in os.environ)
for i in range(30):
    assert urllib.request.urlopen("http://127.0.0.1:%s/" % port).read() == b"ok\n"
PY
check "v[0] == 30" "the server saw every request" "$(count_lines "$tmp/api.arrivals")"
rate=$(arrival_rate "$tmp/api.arrivals")
note "python with an empty environment: $rate/s at max=20"
check "17 <= v[0] <= 23" "throttled after the environment was cleared" "$rate"
check "v[0] == 30" "every connection counted for API" "$(stat_json api 'd["connects"]')"

command -v nginx >/dev/null 2>&1 || { note "nginx is not installed: its part is not run"; exit 0; }
command -v ab >/dev/null 2>&1 || { note "ab is not installed: the nginx part is not run"; exit 0; }
: >"$tmp/api.arrivals"
rm -f "$AGILE_STATE"
nginx_port=$(closed_port)
mkdir "$tmp/nginx"
# Workers run as the test's own user, so they can share its state file (as
# root, nginx would switch them to nobody, who cannot open it).
cat >"$tmp/nginx/nginx.conf" <<EOF
daemon off;
user $(id -un) $(id -gn);
master_process on;
worker_processes 2;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path $tmp/nginx;
	proxy_temp_path $tmp/nginx;
	fastcgi_temp_path $tmp/nginx;
	uwsgi_temp_path $tmp/nginx;
	scgi_temp_path $tmp/nginx;
	upstream api { server 127.0.0.1:$port; keepalive 8; }
	server {
		listen 127.0.0.1:$nginx_port;
		location / {
			proxy_pass http://api;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
EOF
# Not through `preloaded`: a shell function run in the background is a
# subshell of its own, so $! would be that subshell's pid, and the nginx
# master, never signalled, outlived the test with its workers.
LD_PRELOAD="$PRELOAD" nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" \
	</dev/null >"$tmp/nginx/stdout" 2>&1 &
started $!
i=0
until python3 -c "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" "$nginx_port" 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -le 100 ] || fail "nginx did not start: $(cat "$tmp/nginx/stdout" "$tmp/nginx/error.log")"
	sleep 0.05
done
ab -q -k -n 100 -c 8 "http://127.0.0.1:$nginx_port/" >"$tmp/ab.out" 2>&1 ||
	fail "ab failed: $(cat "$tmp/ab.out")"
check "v[0] == 100" "nginx passed every request upstream" "$(count_lines "$tmp/api.arrivals")"
rate=$(arrival_rate "$tmp/api.arrivals")
most=$(arrival_max_window "$tmp/api.arrivals" 1)
note "nginx workers: $rate/s upstream at max=20, busiest second $most"
check "17 <= v[0] <= 23" "nginx's workers are throttled" "$rate"
# Slack for a loaded machine: the server's arrival stamps can bunch by its
# threads' wake-up latency.
check "v[0] <= 24" "no second far above the ceiling" "$most"
