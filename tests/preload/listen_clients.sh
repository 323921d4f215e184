#!/bin/sh
# listen_clients.sh - client_rate= on a listener: one token bucket per
# client, shared by every worker process of the server, bounded in size.
#
# nginx with 4 worker processes listens on three ports, each its own
# AGILE_LISTEN_ rule with proto=http:
#   A  client_rate=5 clients=1000: two clients (127.0.0.2 and 127.0.0.3),
#      each asking 50 times a second for 4 s over 8 kept-alive
#      connections, which the kernel spreads over the workers (reuseport:
#      the chance that all 8 land on one is 6 in 100,000), get 5/s each and
#      their burst (about 25), all workers together; the rest are 429
#      with Retry-After: 0: the next token is at most 200 ms away, one
#      interval, where "1" would be up to 0.8 s late.  Then 20,000
#      distinct source addresses (127.x.y.z), one
#      request each: the table holds at most 1000 clients, and every key
#      that came is held or counted as evicted, idle or over the bound.
#   B  client_rate=0.5 client_key=header:X-Api-Key: a key's second request
#      is refused with Retry-After: 2 (its next token is 2 s away); asked
#      again after those 2 s it is served.  Another key from the same
#      address has its own bucket.
#   C  client_rate=1,burst=2 client_prefix=24: 127.0.5.1 and 127.0.5.2
#      are one client and share a burst of 2; 127.0.6.1 is another.
#   D  client_rate=1 without proto=http, shed_response=503: the bucket
#      counts connections; the second in a second is shed at accept with
#      429 and Retry-After: 1.
# agilestat --config shows each table's settings.
# Without client_rate every request would be served; without a shared
# table each worker would give a client its own 5/s.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
command -v nginx >/dev/null 2>&1 || skip "nginx is not installed"

port_a=$(closed_port)
port_b=$(closed_port)
port_c=$(closed_port)
port_d=$(closed_port)
mkdir "$tmp/nginx"
# Workers run as the test's own user, so they can share its state file.
cat >"$tmp/nginx/nginx.conf" <<CONF
daemon off;
user $(id -un) $(id -gn);
master_process on;
worker_processes 4;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $tmp/nginx;
	proxy_temp_path $tmp/nginx;
	fastcgi_temp_path $tmp/nginx;
	uwsgi_temp_path $tmp/nginx;
	scgi_temp_path $tmp/nginx;
	keepalive_requests 100000;
	server {
		listen 127.0.0.1:$port_a reuseport;
		listen 127.0.0.1:$port_b;
		listen 127.0.0.1:$port_c;
		listen 127.0.0.1:$port_d;
		location / { return 200 "\$pid\n"; }
	}
}
CONF
export AGILE_LISTEN_A="127.0.0.1:$port_a max=64 floor=64 initial=64 proto=http client_rate=5 clients=1000"
export AGILE_LISTEN_B="127.0.0.1:$port_b max=64 floor=64 initial=64 proto=http client_rate=0.5 client_key=header:X-Api-Key"
export AGILE_LISTEN_C="127.0.0.1:$port_c max=64 floor=64 initial=64 proto=http client_rate=1,burst=2 client_prefix=24"
export AGILE_LISTEN_D="127.0.0.1:$port_d max=64 floor=64 initial=64 client_rate=1 shed_response=503"
LD_PRELOAD="$PRELOAD" nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" \
	</dev/null >"$tmp/nginx/stdout" 2>&1 &
started $!
i=0
until python3 -c "import socket, sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1)" "$port_b" 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -le 100 ] || fail "nginx did not start: $(cat "$tmp/nginx/stdout" "$tmp/nginx/error.log")"
	sleep 0.05
done

# A: two clients at 50/s each.
python3 - "$port_a" >"$tmp/a" <<'PY' || fail "the clients of A failed"
import http.client, sys, threading, time
port = int(sys.argv[1])
def connection(source):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                   source_address=(source, 0))
    c.connect()
    return c
results = {}
def client(source):
    conns = [connection(source) for _ in range(8)]
    ok = refused = wrong = 0
    pids = set()
    start = time.monotonic()
    for i in range(200):
        time.sleep(max(0, start + i * 0.02 - time.monotonic()))
        c = conns[i % 8]
        c.request("GET", "/")
        r = c.getresponse()
        body = r.read()
        if r.status == 200:
            ok += 1
            pids.add(body)
        elif r.status == 429:
            refused += 1
            wrong += r.getheader("Retry-After") != "0"
        if c.sock is None:
            sys.exit("a connection of %s was closed" % source)
    results[source] = (ok, refused, wrong, len(pids),
                       "%.3f" % (time.monotonic() - start))
threads = [threading.Thread(target=client, args=(s,))
           for s in ("127.0.0.2", "127.0.0.3")]
for t in threads:
    t.start()
for t in threads:
    t.join()
for s in ("127.0.0.2", "127.0.0.3"):
    print(*results[s])
PY
{ read ok2 refused2 wrong2 pids2 took2; read ok3 refused3 wrong3 pids3 took3; } <"$tmp/a"
note "A: 127.0.0.2 served $ok2, refused $refused2 in $took2 s by $pids2 workers; 127.0.0.3 served $ok3, refused $refused3 in $took3 s by $pids3 workers"
check "v[0] + v[1] == 200 and v[2] + v[3] == 200" "every request is answered 200 or 429" \
	"$ok2" "$refused2" "$ok3" "$refused3"
# Its burst of 5, then 5/s for as long as it asked (4 s unless the machine
# is slow): within one token either way.
check "abs(v[0] - 5 - 5 * v[1]) <= 1.5 and abs(v[2] - 5 - 5 * v[3]) <= 1.5" \
	"each client gets 5/s and its burst across the workers" \
	"$ok2" "$took2" "$ok3" "$took3"
check "v[0] >= 2 and v[1] >= 2" "more than one worker served each client" "$pids2" "$pids3"
check "v[0] == 0 and v[1] == 0" "every 429 at 5/s says Retry-After: 0, its next token within one interval" "$wrong2" "$wrong3"

# A: 20,000 distinct addresses, one request each, by 8 threads.
python3 - "$port_a" <<'PY' || fail "the flood failed"
import http.client, sys, threading
port = int(sys.argv[1])
def flood(first):
    for n in range(first, 20000, 8):
        source = "127.%d.%d.%d" % (10 + n // 250 // 250, n // 250 % 250 + 1, n % 250 + 1)
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                       source_address=(source, 0))
        c.request("GET", "/")
        r = c.getresponse()
        r.read()
        c.close()
        if r.status != 200:
            sys.exit("%s got %d" % (source, r.status))
threads = [threading.Thread(target=flood, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
PY
held=$(stat_json a 'd["clients"]["held"]')
note "A after 20,000 addresses: $(stat_json a 'd["clients"]')"
check "v[0] <= 1000" "at most clients=1000 are held" "$held"
check "v[0] > 0" "some keys were evicted over the bound" \
	"$(stat_json a 'd["clients"]["capacity_evictions"]')"
check "v[0] == 20002" "every key is held or counted evicted, idle or over the bound" \
	"$(stat_json a 'd["clients"]["held"] + d["clients"]["idle_evictions"] + d["clients"]["capacity_evictions"]')"
check "v[0] == 20000 + v[1] + v[2]" "agilestat counts every allow" \
	"$(stat_json a 'd["clients"]["allowed"]')" "$ok2" "$ok3"

# B: a key's bucket gives an honest Retry-After.
python3 - "$port_b" >"$tmp/b" <<'PY' || fail "the clients of B failed"
import http.client, sys, time
port = int(sys.argv[1])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
def get(key):
    c.request("GET", "/", headers={"X-Api-Key": key})
    r = c.getresponse()
    r.read()
    return r.status, r.getheader("Retry-After")
first = get("alpha")
second = get("alpha")
other = get("beta")
time.sleep(int(second[1] or 0))
after = get("alpha")
print(first[0], second[0], second[1] or "none", other[0], after[0])
PY
read first second retry other after <"$tmp/b"
note "B: alpha $first then $second (Retry-After: $retry), beta $other, alpha after the wait $after"
check "v[0] == 200 and v[1] == 429" "a key's second request at 0.5/s is refused" "$first" "$second"
check "v[0] == 2" "with the Retry-After of its next token" "$retry"
check "v[0] == 200" "another key has its own bucket" "$other"
check "v[0] == 200" "asked again after Retry-After, it is served" "$after"

# C: client_prefix=24 makes a /24 one client.
python3 - "$port_c" >"$tmp/c" <<'PY' || fail "the clients of C failed"
import http.client, sys
port = int(sys.argv[1])
def get(source):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                   source_address=(source, 0))
    c.request("GET", "/")
    r = c.getresponse()
    r.read()
    c.close()
    return r.status
print(*[get(s) for s in ("127.0.5.1", "127.0.5.2", "127.0.5.1", "127.0.6.1")])
PY
read c1 c2 c3 c4 <"$tmp/c"
note "C: 127.0.5.1 $c1, 127.0.5.2 $c2, 127.0.5.1 $c3, 127.0.6.1 $c4"
check "v[0] == 200 and v[1] == 200 and v[2] == 429" "two addresses of a /24 share a burst of 2" "$c1" "$c2" "$c3"
check "v[0] == 200" "another /24 is another client" "$c4"

# D: without proto=http, a client's connections.
python3 - "$port_d" >"$tmp/d" <<'PY' || fail "the clients of D failed"
import http.client, sys
port = int(sys.argv[1])
def get():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                   source_address=("127.0.7.1", 0))
    c.request("GET", "/")
    r = c.getresponse()
    r.read()
    c.close()
    return r.status, r.getheader("Retry-After") or "none"
print(*(get() + get()))
PY
read d1 r1 d2 r2 <"$tmp/d"
note "D: first connection $d1, second $d2 (Retry-After: $r2)"
check "v[0] == 200 and v[1] == 429 and v[2] == 1" "a client's second connection in a second is shed with 429 and Retry-After: 1" "$d1" "$d2" "$r2"

"$AGILESTAT" --config >"$tmp/config" || fail "agilestat --config failed"
grep -q "client_rate=5,burst=5 clients=1000 (idle after 2.000s)" "$tmp/config" ||
	fail "agilestat --config does not show A's table: $(cat "$tmp/config")"
grep -q "client_rate=0.5,burst=1 clients=1024 (idle after 4.000s)" "$tmp/config" ||
	fail "agilestat --config does not show B's table: $(cat "$tmp/config")"
