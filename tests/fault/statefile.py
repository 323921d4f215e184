"""statefile.py - find a destination's slot in a live state file, for the
fault tests that write into one (kill_update.sh, slot_garbage.sh).

The header fields and the slot's layout are the ones src/common/state.h
documents and tests/common/check_state_layout.c asserts: slot size and
count at byte 16, the limiter's size and offset at 40 and 48, the
resilience region's size at 112, slots from byte 256, placed by the
name's FNV-1a hash and linear probing, the name at byte 16 of its slot.
"""
import mmap
import struct
import sys


def open_slot(path, name):
    """Map `path` read-write and return (map, header, slot offset) for the
    slot named `name` (str); exit with a message when there is none."""
    name = name.encode()
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
    slot_size, slots = struct.unpack_from("<II", m, 16)
    limiter_size, limiter_off = struct.unpack_from("<QQ", m, 40)
    res_size, = struct.unpack_from("<Q", m, 112)
    header = {"limiter_size": limiter_size, "limiter_off": limiter_off,
              "res_size": res_size}
    h = 14695981039346656037
    for c in name:
        h = ((h ^ c) * 1099511628211) % (1 << 64)
    for k in range(slots):
        slot = 256 + ((h + k) % slots) * slot_size
        if m[slot + 16:slot + 16 + len(name) + 1] == name + b"\0":
            return m, header, slot
    sys.exit("no slot named %r" % name)
