#!/bin/sh
# dns_stall.sh - a resolver that never answers stalls no connection the
# host-name rule does not name, no non-blocking connect and no fork
# (issue 16, item 3).
#
# With AGILE_DEST_API='api.example.com:443 max=5' and a DNS server that
# never answers, the preload's fallback lookup of the configured names ran
# on the first connect that matched no rule, under the lock fork()'s
# handler takes: a connect to an unrelated address waited for the resolver
# (0.02 s became 10 s), a non-blocking connect() blocked as long, and a
# fork() in another thread waited for the lock.  Here the resolver is a
# Python UDP and TCP socket on 127.0.0.2:53 that reads and drops, named by
# an /etc/resolv.conf bind-mounted in a private mount namespace (as root)
# with one 5-second attempt; on main each check below took 5 s or more.
# Each must now take under 2 s (it takes milliseconds; the margin is for a
# loaded machine).
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3
need unshare
[ "$(id -u)" -eq 0 ] || skip "a private /etc/resolv.conf needs root"
unshare -m true 2>/dev/null || skip "cannot make a mount namespace"

cat >"$tmp/deaf_dns.py" <<'PY'
import os, socket, sys, threading
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
udp.bind(("127.0.0.2", 53))
tcp = socket.socket()
tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("127.0.0.2", 53))
tcp.listen(8)
held = []
def hold():
    while True:
        c, _ = tcp.accept()
        held.append(c)  # never answered, never closed
threading.Thread(target=hold, daemon=True).start()
open(sys.argv[1], "w").write("ready")
udp.settimeout(120)
while True:
    try:
        udp.recvfrom(4096)  # read and dropped
    except socket.timeout:
        break
PY
python3 "$tmp/deaf_dns.py" "$tmp/dns.ready" </dev/null >"$tmp/dns.log" 2>&1 &
started $!
await_file "$tmp/dns.ready" "the deaf resolver did not start" "$tmp/dns.log"
printf 'nameserver 127.0.0.2\noptions timeout:5 attempts:1\n' >"$tmp/resolv.conf"

port=$(start_httpd api)
export AGILE_DEST_API="api.example.com:443 max=5"

cat >"$tmp/checks.py" <<'PY'
import os, socket, sys, threading, time
check, port = sys.argv[1], int(sys.argv[2])
t0 = time.monotonic()
if check == "unmatched":
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
    assert s.recv(100).startswith(b"HTTP/")
elif check == "nonblocking":
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", port))
elif check == "fork":
    # Another thread's connect starts the fallback lookup; the fork
    # comes while it would be running.
    def connect():
        socket.create_connection(("127.0.0.1", port)).close()
    threading.Thread(target=connect, daemon=True).start()
    time.sleep(0.005)
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
print("%.3f" % (time.monotonic() - t0))
PY

# check NAME: the seconds the check took, in the private namespace.
timed() {
	unshare -m sh -c 'mount --bind "$1" /etc/resolv.conf && shift &&
		exec env LD_PRELOAD="$0" "$@"' "$PRELOAD" "$tmp/resolv.conf" \
		python3 "$tmp/checks.py" "$1" "$port" 2>"$tmp/$1.err" ||
		fail "$1: the check failed: $(cat "$tmp/$1.err")"
}
# The namespace's resolver is the deaf one: a lookup there times out.
unshare -m sh -c 'mount --bind "$0" /etc/resolv.conf &&
	exec python3 -c "
import socket, time
t = time.monotonic()
try:
    socket.getaddrinfo(\"api.example.com\", 443)
except socket.gaierror:
    pass
print(\"%.1f\" % (time.monotonic() - t))"' "$tmp/resolv.conf" >"$tmp/lookup.s"
check "v[0] >= 4" "a lookup through the deaf resolver takes its timeout" \
	"$(cat "$tmp/lookup.s")"
for name in unmatched nonblocking fork; do
	took=$(timed "$name")
	check "v[0] < 2" "$name: not stalled by the resolver" "$took"
	note "$name: $took s"
done
