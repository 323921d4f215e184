#!/usr/bin/env python3
"""server.py - the downstream of the fault-injection tests.

    server.py MODE PORT_FILE LOG_PREFIX [LIFETIME_S]

A threaded TCP server on 127.0.0.1.  Once it listens it writes its port to
PORT_FILE, and it logs times in seconds, one line each, to

    LOG_PREFIX.accepts    every connection, when it was accepted
                          (CLOCK_MONOTONIC, the clock the preload paces on)
    LOG_PREFIX.requests   every request, when the kernel received its first
                          byte (SO_TIMESTAMPNS, CLOCK_REALTIME): the thread
                          that reads it may run much later on a loaded
                          machine, and its clock would bunch requests up
                          that arrived evenly spaced
    LOG_PREFIX.unstamped  every request the kernel gave no time for, when
                          the server read it (it is in .requests too, at
                          that time): a test that counts requests in time
                          wants this empty

The kernel stamps a packet on arrival only while some socket asks for
stamps, and turns that on from a work queue some time after the first
one asks.  Asked for by each connection once its thread ran, as it was,
175 of crowd.sh's 456 requests on a loaded two-core machine had no stamp
and were logged at the read, up to half a second late, which put 163 in
one second at a ceiling of 100 (101 by the stamped ones alone).  So the
listener asks before it listens (its connections inherit the option),
and the server writes its port only once a connection to itself got a
stamp.

MODE is what it does with a request:

    http   answer it (HTTP/1.0, then close the connection)
    hold   never answer: the test kills the server with requests in flight

It exits by itself after LIFETIME_S seconds (default 120), so a test that
dies cannot leak it.
"""
import os
import socket
import struct
import sys
import threading
import time

# Linux's SO_TIMESTAMPNS (and SCM_TIMESTAMPNS), which Python does not name.
SO_TIMESTAMPNS = 35

RESPONSE = (b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n"
            b"Content-Length: 3\r\nConnection: close\r\n\r\nok\n")


def stamp_of(anc):
    """The SO_TIMESTAMPNS time in recvmsg's ancillary data, or None."""
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec + nsec / 1e9
    return None


def await_stamps(listener):
    """Connect to the listener until a byte sent arrives stamped (for up
    to 10 s): from then on the kernel stamps every arrival."""
    end = time.monotonic() + 10
    while True:
        with socket.create_connection(listener.getsockname()) as c:
            conn, _ = listener.accept()
            with conn:
                c.sendall(b"x")
                _, anc, _, _ = conn.recvmsg(1, socket.CMSG_SPACE(16))
                if stamp_of(anc) is not None:
                    return
        if time.monotonic() > end:
            sys.exit("server.py: the kernel stamps no arrival")
        time.sleep(0.01)


def main():
    mode, port_file, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
    lifetime = float(sys.argv[4]) if len(sys.argv) > 4 else 120.0
    lock = threading.Lock()
    logs = {name: open("%s.%s" % (prefix, name), "a")
            for name in ("accepts", "requests", "unstamped")}

    def log(name, when):
        with lock:
            logs[name].write("%.6f\n" % when)
            logs[name].flush()

    def serve(conn):
        data = b""
        first = True
        try:
            while b"\r\n\r\n" not in data:
                chunk, anc, _, _ = conn.recvmsg(4096, socket.CMSG_SPACE(16))
                if not chunk:
                    return
                if first:
                    when = stamp_of(anc)
                    if when is None:
                        when = time.time()
                        log("unstamped", when)
                    log("requests", when)
                    first = False
                data += chunk
            if mode == "http":
                conn.sendall(RESPONSE)
            else:
                threading.Event().wait()
        except OSError:
            pass
        finally:
            conn.close()

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(512)
    await_stamps(listener)
    threading.Timer(lifetime, lambda: os._exit(0)).start()
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % listener.getsockname()[1])
    os.rename(port_file + ".tmp", port_file)
    while True:
        conn, _ = listener.accept()
        log("accepts", time.monotonic())
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
