#!/usr/bin/python3
"""seeds.py - write the seeds of tests/fuzz/corpus/http2/ (the input format
of tests/fuzz/fuzz_http2.c) from the exchanges recorded here.

    seeds.py CORPUS_DIR

For each exchange: as recorded (the program the client, its sends
planned); each piece cut into three iovecs; and seen from the server's
side (its directions swapped).  Then a few of frames with bogus lengths.
"""
import glob
import os
import struct
import sys

out = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = b"\0\0\0\x04\0\0\0\0\0"


def pieces(path):
    data = open(path, "rb").read()
    i = 0
    while i < len(data):
        n = struct.unpack(">I", data[i + 1:i + 5])[0]
        yield data[i:i + 1] == b"S", data[i + 5:i + 5 + n]
        i += 5 + n


def op(received, payload, iovecs=1, plan=False):
    code = int(received) | (iovecs - 1) << 1 | (0x10 if plan else 0)
    splits = bytes((len(payload) * k // iovecs) % (len(payload) + 1) % 256
                   for k in range(1, iovecs))
    return bytes([code]) + struct.pack(">H", len(payload)) + payload + splits


def write(name, first, ops):
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([first]) + b"".join(ops))


for path in sorted(glob.glob(os.path.join(here, "*.h2"))):
    name = os.path.basename(path)[:-3]
    ps = list(pieces(path))
    write(name, 2, [op(r, p, plan=not r) for r, p in ps])
    write("cut-" + name, 2, [op(r, p, iovecs=3, plan=not r) for r, p in ps])
    write("server-" + name, 3, [op(not r, p) for r, p in ps])


def frame(type_, flags, stream, payload, length=None):
    n = len(payload) if length is None else length
    return struct.pack(">I", n)[1:] + bytes([type_, flags]) + \
        struct.pack(">I", stream) + payload


bogus = {
    "bogus-length-max": frame(0, 0, 1, b"x" * 16, length=0xffffff),
    "bogus-settings-7": frame(4, 0, 0, b"\0" * 7),
    "bogus-pad-past-end": frame(1, 0x0c, 1, b"\x40\x82"),
    "bogus-continuation-alone": frame(9, 4, 1, b"\x82"),
    "bogus-table-update-too-big": frame(1, 5, 1, b"\x3f\xe1\xff\x03\x82"),
}
for name, frames in bogus.items():
    write(name, 2, [op(False, PREFACE + SETTINGS + frames, plan=True),
                    op(True, SETTINGS + frames)])
