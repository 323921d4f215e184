#!/bin/sh
# dup.sh - a duplicated socket is still paced and measured (trickle is not).
#
# trickle forgets a socket once it is dup()ed.  One Python process, at
# floor=max=10/s, makes ten HTTP/1.1 requests on each of three kept-alive
# connections, each used through duplicated descriptors: (1) dup() the
# socket, close the original and use the copy (the hand-off a server makes
# with dup2(s, 1)); (2) write every request through the socket and read
# every response through a dup() of it, as reader and writer streams or
# threads do (this went unpaced: ten requests in 0.41 s at 5/s, no
# samples); (3) dup2() it onto number 100 and alternate requests between
# the two numbers.  Each ten must take at least 0.75 s (0.9 s nominal),
# all thirty must be samples, and the server must see no more than the
# ceiling.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

port=$(start_httpd api)
export AGILE_DEST_API="127.0.0.1:$port max=10 floor=10 initial=10"
cat >"$tmp/dup.py" <<'PY'
import os, socket, sys, time
port = int(sys.argv[1])
REQ = b"GET /dup HTTP/1.1\r\nHost: x\r\n\r\n"

def exchange(wfd, rfd):
    os.write(wfd, REQ)
    data = b""
    while b"\r\n\r\nok\n" not in data:
        chunk = os.read(rfd, 4096)
        if not chunk:
            sys.exit("connection closed mid-response")
        data += chunk

def connection():
    # A blocking socket whose descriptor the caller owns.
    return socket.create_connection(("127.0.0.1", port)).detach()

def timed(pairs):
    start = time.monotonic()
    for wfd, rfd in pairs:
        exchange(wfd, rfd)
    return time.monotonic() - start

s = connection()
copy = os.dup(s)
os.close(s)
handoff = timed([(copy, copy)] * 10)
os.close(copy)

s = connection()
reader = os.dup(s)
split = timed([(s, reader)] * 10)
os.close(reader)
os.close(s)

s = connection()
os.dup2(s, 100)
alternate = timed([(s, s), (100, 100)] * 5)
os.close(100)
os.close(s)
print("%.3f %.3f %.3f" % (handoff, split, alternate))
PY
times=$(preloaded python3 "$tmp/dup.py" "$port") || fail "the client failed"
set -- $times
rate=$(arrival_rate "$tmp/api.arrivals")
note "ten requests each: dup+close $1 s, write/read split $2 s, dup2 alternating $3 s; server saw $rate/s"
check "v[0] >= 0.75" "the copy of a closed socket is paced" "$1"
check "v[0] >= 0.75" "requests written and answered through two numbers are paced" "$2"
check "v[0] >= 0.75" "requests alternating between two numbers are paced" "$3"
check "v[0] <= 10 * 1.15" "the server saw no more than the ceiling" "$rate"
check "v[0] == 30" "every request is a sample" "$(stat_json api 'd["samples_total"]')"
check "v[0] == 3" "three connections" "$(stat_json api 'd["connects"]')"
