#!/usr/bin/env python3
"""Checks attn-perplexity's output against a trained model's reference.json:

  check-perplexity.py OUTPUT reference.json [--rtol R]

reference.json's perplexity.oracle_fp64.ppl is what a double-precision
reference computes with the same method (8 windows of 256 of Persuasion,
each scored alone). Prints both and the relative difference; exits 1 when it
exceeds R (default 1e-4)."""
import json
import re
import sys

out_path, ref_path = sys.argv[1], sys.argv[2]
rtol = float(sys.argv[sys.argv.index("--rtol") + 1]) if "--rtol" in sys.argv else 1e-4
text = open(out_path).read()
match = re.search(r"^perplexity: ([0-9.]+) \+/- ([0-9.]+)$", text, re.M)
if not match:
    sys.exit("no 'perplexity: P +/- E' line in " + out_path)
ours = float(match.group(1))
ref = json.load(open(ref_path))["perplexity"]
expected = ref["oracle_fp64"]["ppl"]
relative = abs(ours - expected) / expected
print("perplexity %.4f, reference fp64 %.4f (torch fp32 %.4f), relative difference %.2e"
      % (ours, expected, ref["torch_fp32"]["ppl"], relative))
sys.exit(0 if relative <= rtol else "relative difference %.2e exceeds %.0e" % (relative, rtol))
