#!/bin/sh
# listen_grpc.sh - a gRPC server behind a listener's limit: each call is a
# stream and takes a permit; a call over the limit is answered UNAVAILABLE
# and the channel goes on serving.
#
# A gRPC server of Debian's python3-grpcio, 8 worker threads, whose unary
# method takes 300 ms and counts the calls in service at once, behind
# AGILE_LISTEN_ proto=grpc max=2 (floor=initial=2: a fixed cap).  A client
# shares one channel (one HTTP/2 connection) among 8 threads, 5 calls
# each.  Counted per connection, as before, the channel's one connection
# took one permit and all 8 calls were in service at once.  Per stream:
# at most 2 calls are in service, every call ends OK or UNAVAILABLE (the
# preload's trailers-only answer, grpc-status 14), some of each, and a
# call made on the same channel after them succeeds.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"

# Python's grpc is Debian's python3-grpcio, for the system's interpreter.
py=/usr/bin/python3
"$py" -c 'import grpc' 2>/dev/null || skip "python3-grpcio not installed"

cat >"$tmp/server.py" <<'PY'
import sys, threading, time
from concurrent import futures
import grpc

port_file, peak_file = sys.argv[1], sys.argv[2]
lock = threading.Lock()
state = {"now": 0, "peak": 0, "calls": 0}


def slow(request, context):
    with lock:
        state["now"] += 1
        state["calls"] += 1
        state["peak"] = max(state["peak"], state["now"])
    time.sleep(0.3)
    with lock:
        state["now"] -= 1
        with open(peak_file, "w") as f:
            f.write("%d %d\n" % (state["peak"], state["calls"]))
    return request


handler = grpc.method_handlers_generic_handler(
    "test.Slow", {"Slow": grpc.unary_unary_rpc_method_handler(slow)})
server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
server.add_generic_rpc_handlers((handler,))
port = server.add_insecure_port("127.0.0.1:0")
server.start()
with open(port_file, "w") as f:
    f.write("%d\n" % port)
server.wait_for_termination(timeout=120)
PY
cat >"$tmp/client.py" <<'PY'
import sys, threading
import grpc

port = int(sys.argv[1])
channel = grpc.insecure_channel("127.0.0.1:%d" % port)
slow = channel.unary_unary("/test.Slow/Slow")
lock = threading.Lock()
codes = {}


def work():
    for _ in range(5):
        try:
            slow(b"x", timeout=20)
            code = "OK"
        except grpc.RpcError as e:
            code = e.code().name
        with lock:
            codes[code] = codes.get(code, 0) + 1


threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
slow(b"after", timeout=20)
print(" ".join("%s=%d" % kv for kv in sorted(codes.items())))
PY

export AGILE_LISTEN_GRPC="127.0.0.1:* max=2 floor=2 initial=2 proto=grpc"
LD_PRELOAD="$PRELOAD" "$py" "$tmp/server.py" "$tmp/port" "$tmp/peak" \
	</dev/null >"$tmp/server.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/server.log")

timeout 60 "$py" "$tmp/client.py" "$port" >"$tmp/client.out" 2>&1 ||
	fail "the gRPC client failed (or the call after the sheds): $(cat "$tmp/client.out")"
note "calls: $(cat "$tmp/client.out"); server peak and calls: $(cat "$tmp/peak")"
code() { sed -n "s/.*\\<$1=\\([0-9]*\\).*/\\1/p" "$tmp/client.out" | grep . || echo 0; }
read peak calls <"$tmp/peak"
check "v[0] <= 2" "at most 2 calls in service" "$peak"
check "v[0] + v[1] == 40" "every call OK or UNAVAILABLE" \
	"$(code OK)" "$(code UNAVAILABLE)"
check "v[0] >= 2 and v[1] > 0" "some calls served, some shed" \
	"$(code OK)" "$(code UNAVAILABLE)"
check "v[0] == v[1] + 1" "the server ran exactly the calls that succeeded" \
	"$calls" "$(code OK)"
check "v[0] == v[1]" "agilestat counts the shed calls" \
	"$(stat_json grpc 'd["listener"]["shed"]')" "$(code UNAVAILABLE)"
