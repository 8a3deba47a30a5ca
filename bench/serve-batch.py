#!/usr/bin/env python3
"""Aggregate decode throughput of attn-serve with N concurrent sequences
against one, side by side: one server (--parallel N), rounds that alternate
1 client and N clients (each a streamed completion of --tokens tokens from
its own short prompt), and the medians and ranges over the rounds.

  bench/serve-batch.py --bin build/bin --model MODEL_DIR [--parallel 8]
                       [--rounds 5] [--tokens 64] [--ctx 1024]

Two figures per case, both from the server's /metrics between the rounds:
decode tok/s is the sessions its batched decode calls ran over the time
spent in them (the model's own rate, whatever the clients cost), aggregate
tok/s is the tokens generated over the round's wall time (HTTP, sampling and
prefill included). A random model, e.g. `attn-make-model --preset llama-110m`
with a tokenizer copied in, serves as well as a trained one.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import http.client


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--ctx", type=int, default=1024)
    parser.add_argument("--serve-arg", action="append", default=[],
                        help="one more attn-serve argument (repeatable)")
    args = parser.parse_args()

    command = [os.path.join(args.bin, "attn-serve"), args.model, "--port", "0", "--quiet",
               "--compiler", os.path.join(args.bin, "attn-compile"), "--ctx", str(args.ctx),
               "--parallel", str(args.parallel), *args.serve_arg]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    port = None
    for raw in server.stderr:
        line = raw.decode(errors="replace")
        sys.stderr.write(line)
        match = re.search(r"listening on http://[^:]+:(\d+)", line)
        if match:
            port = int(match.group(1))
            break
    if port is None:
        sys.exit("attn-serve did not start")
    threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()

    def metrics():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", "/metrics")
        values = {}
        for line in c.getresponse().read().decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.split()
                values[name] = float(value)
        c.close()
        return values

    def client(i, out):
        body = {"prompt": f"Chapter {i}. It was a fine morning in", "max_tokens": args.tokens,
                "temperature": 0, "stream": True}
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        c.request("POST", "/v1/completions", body=json.dumps(body),
                  headers={"Content-Type": "application/json"})
        response = c.getresponse()
        out[i] = response.status == 200 and response.read().rstrip().endswith(b"[DONE]")
        c.close()

    def round_(clients):
        before = metrics()
        ok = [False] * clients
        threads = [threading.Thread(target=client, args=(i, ok)) for i in range(clients)]
        start = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - start
        after = metrics()
        if not all(ok):
            sys.exit(f"a request failed in a round of {clients}")
        delta = {k: after[k] - before[k] for k in after}
        return (delta["attn_decode_tokens_total"] / delta["attn_decode_seconds_total"],
                delta["attn_generated_tokens_total"] / wall,
                delta["attn_decode_tokens_total"] / delta["attn_decode_steps_total"])

    try:
        round_(1)  # warm-up: first touches, the model's threads
        results = {1: [], args.parallel: []}
        for _ in range(args.rounds):
            for clients in (1, args.parallel):
                results[clients].append(round_(clients))
    finally:
        server.terminate()
        server.wait(60)

    def summary(values):
        return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"

    print(f"{'clients':>7}  {'decode tok/s':>22}  {'aggregate tok/s':>22}  batch")
    for clients, rows in results.items():
        decode, aggregate, batch = zip(*rows)
        print(f"{clients:>7}  {summary(decode):>22}  {summary(aggregate):>22}  "
              f"{statistics.median(batch):.1f}")
    one = statistics.median(r[0] for r in results[1])
    many = statistics.median(r[0] for r in results[args.parallel])
    agg1 = statistics.median(r[1] for r in results[1])
    aggn = statistics.median(r[1] for r in results[args.parallel])
    print(f"ratio {args.parallel} vs 1: decode {many / one:.2f}x, aggregate {aggn / agg1:.2f}x")


if __name__ == "__main__":
    main()
