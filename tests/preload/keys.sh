#!/bin/sh
# keys.sh - key_rate= on a CIDR rule: a bucket per address, under the key
# bound, with the evictions in agilestat.
#
# One server listens on 127.0.0.1 to 127.0.0.6 (one port).  The rule
# 127.0.0.0/8:PORT key_rate=2 keys=4 gives each address a token bucket of
# 2 connects a second (burst 2) and keeps at most 4 addresses.  A Python
# client connects 3 times in a row to each of the 6 addresses: each address
# gets 2 connections and its third connect is refused at once with
# ECONNREFUSED (12 answered, 6 refused, while the rule's own limiter at
# 1000/s refuses nothing), and the bound evicts the least recently seen
# address twice.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need python3

python3 - "$tmp/port" <<'PY' &
import os, select, socket, sys, threading
first = socket.socket()
first.bind(("127.0.0.1", 0))
port = first.getsockname()[1]
listeners = [first] + [socket.socket() for _ in range(5)]
for k, s in enumerate(listeners[1:], start=2):
    s.bind(("127.0.0.%d" % k, port))
for s in listeners:
    s.listen(64)
threading.Timer(60, lambda: os._exit(0)).start()
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % port)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    for s in select.select(listeners, [], [])[0]:
        c, _ = s.accept()
        c.close()
PY
started $!
port=$(await_port "$tmp/port")
export AGILE_DEST_LOOP="127.0.0.0/8:$port max=1000 floor=1000 key_rate=2 keys=4"

set -- $(preloaded python3 - "$port" <<'PY'
import socket, sys
port = int(sys.argv[1])
ok = refused = 0
for k in range(1, 7):
    for n in range(3):
        s = socket.socket()
        try:
            s.connect(("127.0.0.%d" % k, port))
            ok += 1
        except ConnectionRefusedError:
            refused += 1
        s.close()
print(ok, refused)
PY
)
note "6 addresses x 3 connects under key_rate=2: $1 connected, $2 refused"
check "v[0] == 12 and v[1] == 6" "each address gets its own 2" "$1" "$2"
check "v[0] == 6" "agilestat counts the refusals" "$(stat_json loop 'd["keys"]["refused"]')"
check "v[0] <= 4" "at most keys=4 addresses are held" "$(stat_json loop 'd["keys"]["held"]')"
check "v[0] == 2" "the bound evicted 2 addresses, shown by agilestat" \
	"$(stat_json loop 'd["keys"]["capacity_evictions"]')"
