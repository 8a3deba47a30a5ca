"""Writes a deliberately broken copy of a safetensors file, for the bad-input
tests: break-safetensors.py KIND IN OUT. Each KIND breaks one rule the
runtime checks (docs/runtime.md, "safetensors validation")."""
import json
import struct
import sys

kind, src, dst = sys.argv[1:4]
data = open(src, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
body = data[8 + n:]
tensors = [k for k in header if k != "__metadata__"]
by_start = sorted(tensors, key=lambda k: header[k]["data_offsets"][0])


def pack(h, body, raw=None):
    text = raw if raw is not None else json.dumps(h, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + body


if kind == "overlap":
    # Two tensors of the same byte size: the second now reads the first's
    # bytes, half shifted.
    sizes = {}
    for k in by_start:
        b, e = header[k]["data_offsets"]
        sizes.setdefault(e - b, []).append(k)
    a, b = next(v for v in sizes.values() if len(v) >= 2)[:2]
    start, end = header[a]["data_offsets"]
    shift = (end - start) // 2 // 4 * 4
    header[b]["data_offsets"] = [start + shift, end + shift]
    out = pack(header, body)
elif kind == "wrong-dtype":
    # Same byte count, a dtype weights cannot have.
    header[by_start[1]]["dtype"] = "I32"
    out = pack(header, body)
elif kind == "dtype-size":
    # The dtype no longer matches the bytes the offsets span.
    header[by_start[1]]["dtype"] = "F16"
    out = pack(header, body)
elif kind == "past-end":
    last = by_start[-1]
    b, e = header[last]["data_offsets"]
    header[last]["data_offsets"] = [b + 64, e + 64]
    out = pack(header, body)
elif kind == "huge-shape":
    header[by_start[0]]["shape"] = [4611686018427387904, 4]
    out = pack(header, body)
elif kind == "negative-offset":
    header[by_start[0]]["data_offsets"][0] = -4
    out = pack(header, body)
elif kind == "header-past-file":
    out = struct.pack("<Q", len(data)) + data[8:]
elif kind == "header-huge":
    out = struct.pack("<Q", 1 << 62) + data[8:]
elif kind == "duplicate-name":
    text = json.dumps(header, separators=(",", ":")).encode()
    first = json.dumps(by_start[0]).encode()
    second = json.dumps(by_start[1]).encode()
    out = pack(None, body, raw=text.replace(second + b":", first + b":", 1))
elif kind == "not-json":
    out = pack(None, body, raw=b"{'format': 'pt'}")
elif kind == "not-object":
    out = pack(None, body, raw=b"[1, 2, 3]")
else:
    sys.exit("unknown kind " + kind)
open(dst, "wb").write(out)
