#!/usr/bin/env python3
"""Writes a copy of an F32 safetensors file with every tensor rounded to
bfloat16 (round to nearest even) and stored as BF16: a slightly different
model for the KL-divergence test.   round-weights.py IN OUT"""
import json
import struct
import sys

src, dst = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
body = data[8 + n:]
out_header, chunks, offset = {}, [], 0
for name, info in header.items():
    if name == "__metadata__":
        out_header[name] = info
        continue
    assert info["dtype"] == "F32", name
    begin, end = info["data_offsets"]
    words = struct.unpack("<%dI" % ((end - begin) // 4), body[begin:end])
    rounded = [((w + 0x7FFF + ((w >> 16) & 1)) >> 16) & 0xFFFF for w in words]
    chunk = struct.pack("<%dH" % len(rounded), *rounded)
    out_header[name] = {"dtype": "BF16", "shape": info["shape"],
                        "data_offsets": [offset, offset + len(chunk)]}
    chunks.append(chunk)
    offset += len(chunk)
text = json.dumps(out_header).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
