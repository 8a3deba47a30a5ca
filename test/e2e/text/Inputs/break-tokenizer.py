#!/usr/bin/env python3
"""Writes a copy of a model folder's tokenizer files with one defect, for the
bad-input tests:  break-tokenizer.py KIND SRC_DIR DEST_DIR"""
import json
import os
import shutil
import sys

kind, src, dest = sys.argv[1:4]
os.makedirs(dest, exist_ok=True)
for name in ("tokenizer_config.json", "generation_config.json"):
    if os.path.exists(os.path.join(src, name)):
        shutil.copy(os.path.join(src, name), dest)
text = open(os.path.join(src, "tokenizer.json"), encoding="utf-8").read()
if kind == "truncate":
    out = text[: len(text) // 2]
else:
    d = json.loads(text)
    if kind == "precompiled":
        # SentencePiece's compiled normalization map: not implemented.
        d["normalizer"]["normalizers"].insert(0, {"type": "Precompiled",
                                                  "precompiled_charsmap": "AA=="})
    elif kind == "unknown-merge":
        d["model"]["merges"][5] = "zzzq " + d["model"]["merges"][5].split(" ")[1]
    elif kind == "duplicate-id":
        # Two pieces with id 100: the one that had it and another one's.
        victim = next(k for k, v in d["model"]["vocab"].items() if v == 101)
        d["model"]["vocab"][victim] = 100
    elif kind == "out-of-range-id":
        victim = next(k for k, v in d["model"]["vocab"].items() if v == 200)
        d["model"]["vocab"][victim] = 4000000
    else:
        sys.exit("unknown kind " + kind)
    out = json.dumps(d, ensure_ascii=False)
open(os.path.join(dest, "tokenizer.json"), "w", encoding="utf-8").write(out)
