"""Replaces local paths in captured files so no machine path leaks into a fixture.
usage: scrub.py DIR OLD=NEW [OLD=NEW...]. Text files are rewritten byte for byte; pickled
Flight Recorder dumps are rewritten opcode by opcode, changing only the strings (and their
length prefixes), so the file keeps the exact opcodes c10d wrote."""
import pathlib
import pickletools
import struct
import sys

root, pairs = pathlib.Path(sys.argv[1]), [a.split("=", 1) for a in sys.argv[2:]]
# Longest first, so a path is replaced before any shorter path it contains.
pairs = sorted(((old.encode(), new.encode()) for old, new in pairs), key=lambda p: -len(p[0]))


def replace(data):
    for old, new in pairs:
        data = data.replace(old, new)
    return data


def rewrite_pickle(data):
    out, ops = bytearray(), list(pickletools.genops(data))
    for i, (op, arg, pos) in enumerate(ops):
        end = ops[i + 1][2] if i + 1 < len(ops) else len(data)
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE"):  # c10d writes BINUNICODE
            s = replace(arg.encode())
            out += b"X" + struct.pack("<I", len(s)) + s
        else:
            out += data[pos:end]
    return bytes(out)


for path in sorted(p for p in root.rglob("*") if p.is_file()):
    data = path.read_bytes()
    new = rewrite_pickle(data) if data[:1] == b"\x80" else replace(data)
    if new != data:
        path.write_bytes(new)
