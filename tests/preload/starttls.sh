#!/bin/sh
# starttls.sh - TLS started on a plain connection is followed as TLS.
#
# SMTP's and IMAP's STARTTLS and MySQL's SSL request begin TLS after plain
# exchanges of the protocol's own.  The TLS walker (src/common/tls.h) decided
# TLS only from a connection's first bytes, so that TLS was counted byte by
# byte: each handshake flight a request with a grant of its own, and the
# handshake's round trip a sample.  Now a ClientHello sent on a plain
# connection starts the walker afresh, as on a new connection: the
# ClientHello takes a grant (the request before it was answered) or joins
# the request in flight (MySQL sends its SSL request unanswered), the
# handshake's answer is no sample, and the first request inside TLS rides
# on that grant.
#
# A Python SMTP server (STARTTLS, then the ssl module server-side) and
# Python's smtplib at floor=max=20/s: per session EHLO, STARTTLS, EHLO
# again inside TLS, ten NOOPs and QUIT, for TLS 1.3 and 1.2, three sessions
# each.  Every one of those fourteen commands is one request: one grant and
# one sample each, the handshake none, as a plain session without STARTTLS
# has one of each for its twelve commands.  Before: 15 samples and 15
# grants a session with TLS 1.3 (the handshake's round trip a sample, the
# client's Finished a request with a grant), 16 and 16 with TLS 1.2.
# openssl s_client -starttls smtp is the second client, each command
# written after the last answer came.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/preload/lib.sh"
need openssl
need python3

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 1 -subj /CN=localhost \
	>"$tmp/openssl.log" 2>&1 || fail "openssl: $(cat "$tmp/openssl.log")"
cat >"$tmp/smtpd.py" <<'PY'
import socket, socketserver, ssl, sys, threading
tmp = sys.argv[1]
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(tmp + "/cert.pem", tmp + "/key.pem")

class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        sock, tls = self.request, False
        reader = sock.makefile("rb")
        sock.sendall(b"220 localhost ESMTP test\r\n")
        while True:
            line = reader.readline()
            if not line:
                break
            verb = line.strip().split(b" ")[0].upper()
            if verb in (b"EHLO", b"HELO"):
                sock.sendall(b"250-localhost\r\n" +
                             (b"" if tls else b"250-STARTTLS\r\n") +
                             b"250 8BITMIME\r\n")
            elif verb == b"STARTTLS" and not tls:
                sock.sendall(b"220 go ahead\r\n")
                sock = context.wrap_socket(sock, server_side=True)
                reader, tls = sock.makefile("rb"), True
            elif verb == b"QUIT":
                sock.sendall(b"221 bye\r\n")
                break
            else:
                sock.sendall(b"250 ok\r\n")
        sock.close()

class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True

server = Server(("127.0.0.1", 0), Handler)
threading.Timer(120, server.shutdown).start()
with open(tmp + "/port.tmp", "w") as f:
    f.write(str(server.server_address[1]))
__import__("os").rename(tmp + "/port.tmp", tmp + "/port")
server.serve_forever()
PY
# smtp.py PORT TLS NOOPS SESSIONS: TLS is "1.3", "1.2" or "plain".
cat >"$tmp/smtp.py" <<'PY'
import smtplib, ssl, sys
port, version, noops, sessions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
context.maximum_version = (ssl.TLSVersion.TLSv1_2 if version == "1.2"
                           else ssl.TLSVersion.TLSv1_3)
for _ in range(sessions):
    smtp = smtplib.SMTP("127.0.0.1", int(port), timeout=10)
    smtp.ehlo()
    if version != "plain":
        assert smtp.starttls(context=context)[0] == 220
        smtp.ehlo()
        assert smtp.sock.version() == "TLSv" + version, smtp.sock.version()
    for _ in range(noops):
        assert smtp.noop()[0] == 250
    smtp.quit()
PY
python3 "$tmp/smtpd.py" "$tmp" >"$tmp/smtpd.log" 2>&1 &
started $!
port=$(await_port "$tmp/port" "$tmp/smtpd.log")
export AGILE_DEST_SMTP="127.0.0.1:$port max=20 floor=20 initial=20"

# counts LABEL COMMANDS SESSIONS: one grant and one sample per command,
# none truncated, one connect per session.
counts() {
	# shellcheck disable=SC2046
	set -- "$@" $(stat_json smtp \
		'"%d %d %d %d" % (d["samples_total"], d["grants_total"], d["truncated"], d["connects"])')
	note "$1: $2 commands on $3 connections: $4 samples, $5 grants, $6 truncated"
	check "v[0] == $2" "$1: one sample per command" "$4"
	check "v[0] == $2" "$1: one grant per command" "$5"
	check "v[0] == 0" "$1: nothing truncated" "$6"
	check "v[0] == $3" "$1: every connection counted" "$7"
}

preloaded python3 "$tmp/smtp.py" "$port" plain 10 3 || fail "smtplib failed"
counts "smtplib, plain" 36 3
for version in 1.3 1.2; do
	rm -f "$AGILE_STATE"
	preloaded python3 "$tmp/smtp.py" "$port" "$version" 10 3 ||
		fail "smtplib failed (TLS $version)"
	counts "smtplib, STARTTLS, TLS $version" 42 3
done

# openssl s_client says EHLO and STARTTLS itself; each command after is
# written once the answer to the one before has arrived, as smtplib does.
rm -f "$AGILE_STATE"
(
	i=0
	for command in "EHLO localhost" NOOP NOOP NOOP QUIT; do
		wait=0
		while :; do
			answers=$(grep -c '^25[0-9] \|^221 ' "$tmp/s_client.out" 2>/dev/null || true)
			[ "${answers:-0}" -lt "$i" ] || break
			wait=$((wait + 1))
			[ "$wait" -le 200 ] || break
			sleep 0.05
		done
		printf '%s\r\n' "$command"
		i=$((i + 1))
	done
	sleep 1
) | preloaded timeout 20 openssl s_client -connect "127.0.0.1:$port" \
	-starttls smtp -quiet >"$tmp/s_client.out" 2>"$tmp/s_client.err" || true
grep -q '^221 ' "$tmp/s_client.out" ||
	fail "s_client: $(cat "$tmp/s_client.out" "$tmp/s_client.err")"
counts "openssl s_client -starttls smtp" 7 1
