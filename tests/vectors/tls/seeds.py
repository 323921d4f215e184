#!/usr/bin/python3
"""seeds.py - write the seeds of tests/fuzz/corpus/tls_plain/ (the input
format of tests/fuzz/fuzz_tls_plain.c) from the connections recorded here.

    seeds.py CORPUS_DIR

For each connection, as curl's goes through the preload: the session's
handshake named (SSL_connect, its socket learnt from the first send), the
ciphertext on the socket up to the first plaintext, then the plaintext
through the session with the descriptor from the table, the ciphertext
beside it (passed through), the close.  Then the same with the
descriptor as SSL_get_fd gives it and each plaintext piece but the first
write split over three calls, and with a table of 16 slots.
"""
import glob
import os
import struct
import sys

out = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
FD, SESSION, NO_FD = 5, 3, 0x80
CONNECT, CLOSE, HANDSHAKE, RETURN, SOCKET, PLAIN = 0, 1, 2, 4, 5, 6


def pieces(path):
    data = open(path, "rb").read()
    i = 0
    while i < len(data):
        n = struct.unpack(">I", data[i + 1:i + 5])[0]
        yield data[i:i + 1].decode(), data[i + 5:i + 5 + n]
        i += 5 + n


def call(received, payload, iovecs=1):
    """A call of at most 65535 bytes, cut into `iovecs` iovecs."""
    splits = bytes(len(payload) * k // iovecs % (len(payload) + 1) % 256
                   for k in range(1, iovecs))
    return bytes([(iovecs - 1) | (8 if received else 0)]) + \
        struct.pack(">H", len(payload)) + payload + splits


def op(what, session=0, fd=None):
    code = what | (session & 16) >> 1 | (session & 15) << 4
    return bytes([code]) + (bytes([fd]) if fd is not None else b"")


def script(ps, fd_byte, calls):
    """The connection's operations; each plaintext piece in `calls` calls
    (reads and writes that split frames and messages)."""
    ops = [op(CONNECT, fd=FD), op(HANDSHAKE, SESSION)]
    plain = wrote = False
    for tag, data in ps:
        if tag in "cs" and not plain:
            ops.append(op(RETURN))
            plain = True
        if tag in "CS":
            for at in range(0, max(len(data), 1), 0xffff):
                ops.append(op(SOCKET, fd=FD) +
                           call(tag == "S", data[at:at + 0xffff]))
            continue
        # The first write whole: the preload knows HTTP/2 by its preface
        # in one write.
        n = 1 if tag == "c" and not wrote else calls
        wrote = wrote or tag == "c"
        cuts = sorted({0, len(data)} |
                      {len(data) * k // n for k in range(1, n)})
        for a, b in zip(cuts, cuts[1:]):
            for at in range(a, b, 0xffff):
                ops.append(op(PLAIN, SESSION, fd_byte) +
                           call(tag == "s", data[at:min(b, at + 0xffff)]))
    ops.append(op(CLOSE, fd=FD))
    return b"".join(ops)


for path in sorted(glob.glob(os.path.join(here, "*.tls"))):
    name = os.path.basename(path)[:-4]
    ps = list(pieces(path))
    hpack = 4 if name.startswith("curl-h2") else 0
    for prefix, first, fd_byte, calls in (("", hpack, NO_FD, 1),
                                          ("getfd-split-", hpack, FD, 3),
                                          ("small-", hpack | 1, NO_FD, 1)):
        with open(os.path.join(out, prefix + name), "wb") as f:
            f.write(bytes([first]) + script(ps, fd_byte, calls))
