#!/usr/bin/env python3
"""Writes graft model files (.gpb + .gpb.data, and .json) without graft.

It encodes the protobuf wire format and the side-file layout by hand from
serialize/graft.proto and docs/serialization.md, independently of graft's
writer, so the lit tests check that graft reads what the documentation
describes.

  gpb.py gpb FILE [--major N] [--minor N] [--bad-id] [--misaligned]
      FILE and FILE.data: the model below
  gpb.py json FILE [--major N]
      the same model as JSON (protobuf's JSON mapping, data inline)

The model: y = relu(x + b) and s = sum(t), with
  b : f32[4] = [1, -2, 3, -4]    inline
  t : f32[300], every element 0.5, in the side file at offset 64
"""

import base64
import json
import struct
import sys

MASK = (1 << 64) - 1
P1, P2, P3 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def mix(z):
    z = ((z ^ (z >> 30)) * P2) & MASK
    z = ((z ^ (z >> 27)) * P3) & MASK
    return z ^ (z >> 31)


def side_file_id(data):
    """The side file's id: serialize/side_file.h's hash of `data`."""
    lanes = [P1, P2, P3, P1 ^ P2]
    padded = data + b"\0" * (-len(data) % 32)
    for block in range(0, len(padded), 32):
        for i in range(4):
            (w,) = struct.unpack_from("<Q", padded, block + 8 * i)
            h = ((lanes[i] ^ w) * P1) & MASK
            lanes[i] = h ^ (h >> 32)
    h = mix(len(data) ^ P3)
    for lane in lanes:
        h = mix(h ^ mix(lane))
    return h


def varint(v):
    out = bytearray()
    v &= MASK
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def vfield(number, value):
    return varint(number << 3) + varint(value)


def lfield(number, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def fixed64(number, value):
    return varint(number << 3 | 1) + struct.pack("<Q", value)


F32 = 1  # DTYPE_F32
PLACEHOLDER, GET_ATTR, CALL_FUNCTION, OUTPUT = 1, 2, 3, 5

B_DATA = struct.pack("<4f", 1, -2, 3, -4)
T_DATA = struct.pack("<300f", *([0.5] * 300))


def tensor_type(dims):
    return vfield(1, F32) + b"".join(lfield(2, vfield(1, d)) for d in dims)


def node(name, op, target, args=(), dims=None):
    out = lfield(1, name) + vfield(2, op) + lfield(3, target)
    for a in args:
        out += lfield(4, a)
    if dims is not None:
        out += lfield(6, tensor_type(dims))
    return out


def ref(name):
    return lfield(2, name)  # Argument.node


def model_bytes(major, minor, offset, data_id, data_size):
    graph = b"".join(lfield(1, n) for n in [
        node("x", PLACEHOLDER, "x", dims=[4]),
        node("b", GET_ATTR, "b", dims=[4]),
        node("t", GET_ATTR, "t", dims=[300]),
        node("add", CALL_FUNCTION, "add", [ref("x"), ref("b")], dims=[4]),
        node("relu", CALL_FUNCTION, "relu", [ref("add")], dims=[4]),
        node("s", CALL_FUNCTION, "sum", [ref("t")], dims=[]),
        node("output", OUTPUT, "output",
             [lfield(8, lfield(1, ref("relu")) + lfield(1, ref("s")))]),
    ])
    b = lfield(1, "b") + vfield(2, F32) + lfield(3, varint(4)) + lfield(5, B_DATA)
    external = vfield(1, offset) + vfield(2, len(T_DATA))
    t = lfield(1, "t") + vfield(2, F32) + lfield(3, varint(300)) + lfield(6, external)
    out = vfield(1, major)
    if minor:
        out += vfield(2, minor)
    out += lfield(3, "gpb.py")
    out += lfield(4, graph) + lfield(5, b) + lfield(5, t)
    out += lfield(8, vfield(1, data_size) + fixed64(2, data_id))
    return out


def write_gpb(path, major, minor, bad_id, misaligned):
    # Header, then t at offset 64 (1200 bytes).
    body = T_DATA
    size = 64 + len(body)
    data_id = side_file_id(body)
    header = b"GRAFTDAT" + struct.pack("<QQ", data_id, size)
    header += b"\0" * (64 - len(header))
    with open(path + ".data", "wb") as f:
        f.write(header + body)
    if bad_id:
        data_id ^= 1
    offset = 96 if misaligned else 64
    with open(path, "wb") as f:
        f.write(model_bytes(major, minor, offset, data_id, size))


def write_json(path, major):
    def n(name, op, target, args=(), dims=None):
        out = {"name": name, "op": op, "target": target}
        if args:
            out["args"] = list(args)
        if dims is not None:
            out["type"] = {"dtype": "DTYPE_F32",
                           "dims": [{"size": str(d)} for d in dims]}
        return out

    model = {
        "format_major": major,
        "producer": "gpb.py",
        "graph": {"nodes": [
            n("x", "OPCODE_PLACEHOLDER", "x", dims=[4]),
            n("b", "OPCODE_GET_ATTR", "b", dims=[4]),
            n("t", "OPCODE_GET_ATTR", "t", dims=[300]),
            n("add", "OPCODE_CALL_FUNCTION", "add",
              [{"node": "x"}, {"node": "b"}], dims=[4]),
            n("relu", "OPCODE_CALL_FUNCTION", "relu", [{"node": "add"}], dims=[4]),
            n("s", "OPCODE_CALL_FUNCTION", "sum", [{"node": "t"}], dims=[]),
            n("output", "OPCODE_OUTPUT", "output",
              [{"list": {"elements": [{"node": "relu"}, {"node": "s"}]}}]),
        ]},
        "tensors": [
            {"name": "b", "dtype": "DTYPE_F32", "dims": ["4"],
             "inline_data": base64.b64encode(B_DATA).decode()},
            {"name": "t", "dtype": "DTYPE_F32", "dims": ["300"],
             "inline_data": base64.b64encode(T_DATA).decode()},
        ],
    }
    with open(path, "w") as f:
        json.dump(model, f, indent=1)


def main(argv):
    if len(argv) < 3 or argv[1] not in ("gpb", "json"):
        sys.exit(__doc__)
    kind, path, rest = argv[1], argv[2], argv[3:]
    major, minor = 1, 0
    flags = set()
    i = 0
    while i < len(rest):
        if rest[i] in ("--major", "--minor"):
            value = int(rest[i + 1])
            if rest[i] == "--major":
                major = value
            else:
                minor = value
            i += 2
        else:
            flags.add(rest[i])
            i += 1
    if kind == "gpb":
        write_gpb(path, major, minor, "--bad-id" in flags, "--misaligned" in flags)
    else:
        write_json(path, major)


if __name__ == "__main__":
    main(sys.argv)
