#!/usr/bin/env python3
"""Writes and shows NumPy .npy files without NumPy, for the lit tests.

It follows the format description (magic, version 1.0, little-endian header
length, a Python dict literal padded to a multiple of 64 bytes, raw data),
independently of graft's own reader and writer.

  npy.py write FILE DESCR SHAPE [VALUE...]   SHAPE: "2,3", "5" or "" (scalar)
  npy.py show FILE                           header fields, then the values
"""

import ast
import struct
import sys

FORMATS = {"<f4": "f", "<f8": "d", "<i4": "i", "<i8": "q", "|i1": "b",
           "|u1": "B", "|b1": "?"}


def write(path, descr, shape_text, values):
    shape = tuple(int(d) for d in shape_text.split(",") if d)
    count = 1
    for d in shape:
        count *= d
    if len(values) != count:
        sys.exit(f"npy.py: {len(values)} values for shape {shape}")
    code = FORMATS[descr]
    convert = float if code in "fd" else int
    data = struct.pack("<%d%s" % (count, code), *[convert(v) for v in values])
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (
        descr, shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1") + data)


def show(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:6] != b"\x93NUMPY":
        sys.exit("npy.py: not a .npy file")
    major = raw[6]
    size_bytes = 2 if major == 1 else 4
    (length,) = struct.unpack("<H" if size_bytes == 2 else "<I",
                              raw[8:8 + size_bytes])
    start = 8 + size_bytes
    header = ast.literal_eval(raw[start:start + length].decode("latin1"))
    print("version %d.%d" % (major, raw[7]))
    print("descr %s fortran_order %s shape %r" % (
        header["descr"], header["fortran_order"], header["shape"]))
    count = 1
    for d in header["shape"]:
        count *= d
    code = FORMATS[header["descr"]]
    data = raw[start + length:]
    if len(data) != count * struct.calcsize(code):
        sys.exit("npy.py: %d data bytes for %d elements" % (len(data), count))
    values = struct.unpack("<%d%s" % (count, code), data)
    print("values " + " ".join("%.9g" % v if code in "fd" else str(int(v))
                               for v in values))


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    elif len(sys.argv) == 3 and sys.argv[1] == "show":
        show(sys.argv[2])
    else:
        sys.exit(__doc__)
