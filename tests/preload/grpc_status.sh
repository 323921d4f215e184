#!/bin/sh
# grpc_status.sh - with proto=http, every gRPC status the verdicts read
# counts as it should, wherever the server puts it.
#
# A Python gRPC server (Debian's python3-grpcio, cleartext) has four
# methods; a client on one channel calls each for 1 s, in this order:
#   StreamOk    three messages, then grpc-status 0 in trailers: every call
#               is one sample (timed to the answer's headers), none is
#               unreachable or truncated;
#   Deadline    DEADLINE_EXCEEDED, trailers-only: truncated, no sample;
#   StreamDown  one message, then grpc-status 14 (UNAVAILABLE) in the
#               trailers after it: unreachable, no sample - the headers
#               before the message say 200 and nothing else, so the
#               verdict waits for the trailers (h2conn.c);
#   Exhausted   RESOURCE_EXHAUSTED, trailers-only: unreachable, no sample.
# Counters are read after each method and compared as differences.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
py=/usr/bin/python3
"$py" -c 'import grpc' 2>/dev/null || skip "python3-grpcio not installed"

cat >"$tmp/client.py" <<'PY'
import sys, time
import grpc
port, method, mark = int(sys.argv[1]), sys.argv[2], sys.argv[3]
channel = grpc.insecure_channel("127.0.0.1:%d" % port)
if method.startswith("Stream"):
    call = channel.unary_stream("/test.S/" + method)
    def once():
        for _ in call(b"x", timeout=30):
            pass
else:
    call = channel.unary_unary("/test.S/" + method)
    def once():
        call(b"x", timeout=30)
calls, codes, end = 0, {}, time.monotonic() + 1.0
while time.monotonic() < end:
    calls += 1
    try:
        once()
        code = "OK"
    except grpc.RpcError as e:
        code = e.code().name
    codes[code] = codes.get(code, 0) + 1
# The channel closes before the counters are read.
channel.close()
print(calls, " ".join("%s=%d" % kv for kv in sorted(codes.items())))
PY

start_grpc "$py" <<'PY'
import grpc
def stream_ok(request, context):
    for _ in range(3):
        yield b"ok"
def deadline(request, context):
    context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "late")
def stream_down(request, context):
    yield b"one"
    context.abort(grpc.StatusCode.UNAVAILABLE, "down")
def exhausted(request, context):
    context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "full")
handler = grpc.method_handlers_generic_handler("test.S", {
    "StreamOk": grpc.unary_stream_rpc_method_handler(stream_ok),
    "Deadline": grpc.unary_unary_rpc_method_handler(deadline),
    "StreamDown": grpc.unary_stream_rpc_method_handler(stream_down),
    "Exhausted": grpc.unary_unary_rpc_method_handler(exhausted)})
PY
port=$grpc_port
export AGILE_DEST_G="127.0.0.1:$port max=200 floor=20 probe=1 initial=100 slo=100ms tick=100ms proto=http"

# counters: samples unreachable truncated, as one line
counters() {
	echo "$(stat_json g 'd["samples_total"]') $(stat_json g 'd["unreachable"]') $(stat_json g 'd["truncated"]')"
}
before="0 0 0"
for case in "StreamOk OK" "Deadline DEADLINE_EXCEEDED" \
	"StreamDown UNAVAILABLE" "Exhausted RESOURCE_EXHAUSTED"; do
	# shellcheck disable=SC2086
	set -- $case
	method=$1 code=$2
	preloaded timeout 60 "$py" "$tmp/client.py" "$port" "$method" x \
		>"$tmp/client.out" 2>&1 ||
		fail "the gRPC client failed on $method: $(cat "$tmp/client.out")"
	# shellcheck disable=SC2046
	set -- $(cat "$tmp/client.out")
	calls=$1 codes=$2
	[ "$codes" = "$code=$calls" ] ||
		fail "$method: expected every call $code, got $codes of $calls"
	after=$(counters)
	# shellcheck disable=SC2086
	set -- $before $after
	ds=$(($4 - $1)) du=$(($5 - $2)) dt=$(($6 - $3))
	note "$method: $calls calls $codes; samples +$ds unreachable +$du truncated +$dt"
	case $method in
	StreamOk)
		check "v[0] == v[1] and v[2] == 0 and v[3] == 0" \
			"$method: one sample a call, none unreachable or truncated" \
			"$ds" "$calls" "$du" "$dt" ;;
	Deadline)
		check "v[0] == 0 and v[1] == 0 and v[2] == v[3]" \
			"$method: every call truncated, none a sample" \
			"$ds" "$du" "$dt" "$calls" ;;
	*)
		check "v[0] == 0 and v[1] == v[3] and v[2] == 0" \
			"$method: every call unreachable, none a sample" \
			"$ds" "$du" "$dt" "$calls" ;;
	esac
	before=$after
done
