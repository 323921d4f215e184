#!/bin/sh
# grpc_unavailable.sh - with proto=http, a gRPC server answering
# UNAVAILABLE drives the rate down as a refused port does.
#
# A Python gRPC server (Debian's python3-grpcio, cleartext) answers every
# unary call with grpc-status 14 (UNAVAILABLE), as a trailers-only
# response: grpc-status in the stream's one header block, which the HPACK
# decoder reads (h2conn.h, http.c's agile__http_h2_verdict).  A client on
# one channel calls it for 1.5 s under the settings of refused.sh (slo=100ms
# floor=10 probe=1): every call is unreachable, none is a sample, and the
# rate falls from 20 to 2 or less (toward the probe floor of 1/s), where
# without proto=http each fast answer is a fast sample and the rate rises.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
py=/usr/bin/python3
"$py" -c 'import grpc' 2>/dev/null || skip "python3-grpcio not installed"

cat >"$tmp/client.py" <<'PY'
import sys, time
import grpc
port = int(sys.argv[1])
channel = grpc.insecure_channel("127.0.0.1:%d" % port)
echo = channel.unary_unary("/test.Echo/Echo")
calls, unavailable, end = 0, 0, time.monotonic() + 1.5
while time.monotonic() < end:
    calls += 1
    try:
        echo(b"x", timeout=30)
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.UNAVAILABLE:
            unavailable += 1
print(calls, unavailable)
PY

start_grpc "$py" <<'PY'
import grpc
def down(request, context):
    context.abort(grpc.StatusCode.UNAVAILABLE, "down")
handler = grpc.method_handlers_generic_handler(
    "test.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(down)})
PY
port=$grpc_port
export AGILE_DEST_DOWN="127.0.0.1:$port max=50 floor=10 probe=1 initial=20 slo=100ms tick=100ms proto=http"
preloaded timeout 60 "$py" "$tmp/client.py" "$port" >"$tmp/client.out" 2>&1 ||
	fail "the gRPC client failed: $(cat "$tmp/client.out")"
# shellcheck disable=SC2046
set -- $(cat "$tmp/client.out")
unreachable=$(stat_json down 'd["unreachable"]')
samples=$(stat_json down 'd["samples_total"]')
final=$(stat_json down 'd["rate"]')
note "UNAVAILABLE for 1.5 s: $1 calls ($2 UNAVAILABLE), $unreachable unreachable, $samples samples, rate now $final"
check "v[0] == v[1] and v[0] > 0" "every call answered UNAVAILABLE" "$2" "$1"
check "v[0] == v[1]" "every call counted unreachable" "$unreachable" "$1"
check "v[0] == 0" "no UNAVAILABLE call is a sample" "$samples"
check "v[0] <= 2" "the rate fell from 20 toward the probe floor" "$final"
