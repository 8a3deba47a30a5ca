#!/usr/bin/env python3
"""Checks an attn-inspect report folder against its own arrays.

  check-report.py DIR --layers L --heads H --hidden D
                  [--min-standing N] [--max-standing N]

attention.npy is [L, H, T, T], causal (0 after the diagonal) with rows that
sum to 1; residual.npy [L + 1, T, D] and final_norm.npy [T, D] are finite;
tokens.txt has T lines; scores.json has the L x H heads, and its
previous-token scores and their "stands out" flags are recomputed here from
attention.npy (mean p[i][i-1] over i >= 1; stands out at >= 0.5 and >= 4x
what uniform causal attention scores). The number of heads that stand out
must lie in [--min-standing, --max-standing].
"""
import argparse
import json
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--layers", type=int, required=True)
    parser.add_argument("--heads", type=int, required=True)
    parser.add_argument("--hidden", type=int, required=True)
    parser.add_argument("--min-standing", type=int, default=0)
    parser.add_argument("--max-standing", type=int, default=1 << 30)
    args = parser.parse_args()
    d = args.dir
    errors = []

    attention = np.load(f"{d}/attention.npy")
    L, H, T = args.layers, args.heads, attention.shape[-1]
    if attention.dtype != np.float32 or attention.shape != (L, H, T, T):
        sys.exit(f"attention.npy is {attention.dtype} {attention.shape}, expected float32 "
                 f"{(L, H, T, T)}")
    upper = np.triu(np.ones((T, T), dtype=bool), k=1)
    if np.any(attention[..., upper] != 0):
        errors.append("attention.npy has weight after the diagonal")
    sums = attention.sum(axis=-1, dtype=np.float64)
    if np.max(np.abs(sums - 1)) > 1e-5:
        errors.append(f"attention rows sum to {sums.min()}..{sums.max()}")
    for name, shape in [("residual", (L + 1, T, args.hidden)), ("final_norm", (T, args.hidden))]:
        array = np.load(f"{d}/{name}.npy")
        if array.shape != shape or not np.all(np.isfinite(array)):
            errors.append(f"{name}.npy is {array.shape} (finite: {np.all(np.isfinite(array))}), "
                          f"expected {shape}")
    with open(f"{d}/tokens.txt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines[-1] == "":
        lines.pop()
    if len(lines) != T:
        errors.append(f"tokens.txt has {len(lines)} lines for {T} tokens")

    with open(f"{d}/scores.json", encoding="utf-8") as f:
        scores = json.load(f)
    entries = scores["heads_scores"]
    if len(entries) != L * H:
        errors.append(f"scores.json has {len(entries)} heads, expected {L * H}")
    uniform = np.mean([1.0 / (i + 1) for i in range(1, T)])
    standing = []
    for entry in entries:
        p = attention[entry["layer"], entry["head"]].astype(np.float64)
        previous = np.mean([p[i, i - 1] for i in range(1, T)])
        stands = bool(previous >= 0.5 and previous >= 4 * uniform)
        if abs(previous - entry["previous_token"]) > 1e-6 or stands != entry[
                "previous_token_stands_out"]:
            errors.append(f"layer {entry['layer']} head {entry['head']}: scores.json says "
                          f"{entry['previous_token']} ({entry['previous_token_stands_out']}), "
                          f"the weights give {previous} ({stands})")
        if stands:
            standing.append(f"L{entry['layer']}H{entry['head']} {previous:.3f}")
    if not args.min_standing <= len(standing) <= args.max_standing:
        errors.append(f"{len(standing)} heads stand out ({', '.join(standing)}), expected "
                      f"{args.min_standing} to {args.max_standing}")
    if errors:
        sys.exit("\n".join(f"{d}: {e}" for e in errors))
    print(f"ok: {d}: {T} tokens, previous-token heads: {', '.join(standing) or 'none'}")


main()
