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
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need curl

port=$(start_httpd api)
export AGILE_DEST_WEB="localhost:$port max=50 floor=50"
preloaded python3 -c "import urllib.request as u; u.urlopen('http://localhost:$port/').read()" ||
	fail "python via getaddrinfo failed"
check "v[0] == 1" "a name from getaddrinfo matches" "$(stat_json web 'd["connects"]')"
preloaded curl -sf -4 -o /dev/null "http://localhost:$port/" || fail "curl failed"
check "v[0] == 2" "a name curl resolves itself matches through the fallback" \
	"$(stat_json web 'd["connects"]')"

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
