#!/bin/sh
# hostname.sh - hostname destinations, learned and resolved.
#
# AGILE_DEST_WEB names "localhost:PORT".  Python resolves the name with
# getaddrinfo, which the preload watches; curl resolves "localhost" by itself
# without any lookup, so the preload's start-up fallback (resolving
# configured names once, at the first connect that matches nothing) must
# catch it.  Both connections must count for WEB.  A configured name that
# does not resolve (no-such-host.invalid) counts as unreachable for its
# destination when the program's lookup fails, and never as a sample.
#
# The checks may not depend on how this machine's /etc/hosts is written
# (issue 16, item 15): where "localhost" is ::1 as well as 127.0.0.1, as
# in Debian's stock file, Python tries ::1 first, is refused by the server
# (it listens on 127.0.0.1) and connects again over IPv4, so its lookup
# gives two connects and one unreachable where it gives one elsewhere.
# The expectations hold under both: Python's one request is one sample
# and at least one connect, and curl -4 adds exactly one connect.  As
# root, the checks run once under each layout, each /etc/hosts bind-
# mounted in a private mount namespace; otherwise once, under this
# machine's.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need curl

if [ -z "${AGILE_HOSTS_LAYOUT:-}" ] && [ "$(id -u)" -eq 0 ] &&
   unshare -m true 2>/dev/null; then
	printf '127.0.0.1 localhost\n' >"$tmp/hosts.ipv4"
	printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' \
		>"$tmp/hosts.debian"
	for layout in ipv4 debian; do
		AGILE_HOSTS_LAYOUT=$layout unshare -m sh -c \
			'mount --bind "$1" /etc/hosts && exec sh "$0"' \
			"$0" "$tmp/hosts.$layout" ||
			fail "under the $layout /etc/hosts"
	done
	exit 0
fi
[ -z "${AGILE_HOSTS_LAYOUT:-}" ] || note "/etc/hosts: $AGILE_HOSTS_LAYOUT"

port=$(start_httpd api)
export AGILE_DEST_WEB="localhost:$port max=50 floor=50"
preloaded python3 -c "import urllib.request as u; u.urlopen('http://localhost:$port/').read()" ||
	fail "python via getaddrinfo failed"
python_connects=$(stat_json web 'd["connects"]')
check "v[0] >= 1" "a name from getaddrinfo matches" "$python_connects"
check "v[0] == 1" "one request, one sample" "$(stat_json web 'd["samples_total"]')"
preloaded curl -sf -4 -o /dev/null "http://localhost:$port/" || fail "curl failed"
check "v[0] == v[1] + 1" "a name curl resolves itself matches through the fallback" \
	"$(stat_json web 'd["connects"]')" "$python_connects"

export AGILE_DEST_NX="no-such-host.invalid:80 max=5"
preloaded python3 -c "
import socket
try:
    socket.getaddrinfo('no-such-host.invalid', 80)
except socket.gaierror:
    pass
" 2>/dev/null
check "v[0] >= 1" "a failed lookup counts as unreachable" "$(stat_json nx 'd["unreachable"]')"
check "v[0] == 0" "and never as a sample" "$(stat_json nx 'd["samples_total"]')"
