#!/usr/bin/env python3
"""Tensor-parallel decode on one machine: attn-run alone and under mpirun.

  bench/tensor-parallel.py MODEL_DIR [--ranks 1,2,4] [--rounds 5]
                           [--tokens 128] [--bin build/bin]

Each round runs every rank count once, in turn (interleaved, so that the
machine's drift hits them alike), as

  [mpirun -np N --oversubscribe --bind-to none] attn-run MODEL_DIR
      --tokens <16 ids> -n TOKENS --ignore-eos

and reads from rank 0's output the decode rate and the share of the decode
time rank 0 spent in all-reduces and gathers (waiting for the slowest rank
included), and samples every rank's resident memory (/proc/PID/status every 50 ms,
RssAnon: the packed weights, KV cache and scratch; RssFile: mapped
checkpoint pages, shared between the ranks of a machine) while it decodes. Prints medians and ranges per rank
count. The libraries are compiled (and cached in MODEL_DIR/.attn) by a
first, untimed run of each rank count.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time


def rank_processes(job_pid):
    """pid -> rank of the job's attn-run processes (the job itself when it
    runs alone)."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parent = int(fields[1])
            if int(pid) != job_pid and parent != job_pid:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"attn-run" not in f.read().split(b"\0")[0]:
                    continue
            rank = 0
            with open(f"/proc/{pid}/environ", "rb") as f:
                for item in f.read().split(b"\0"):
                    if item.startswith(b"OMPI_COMM_WORLD_RANK="):
                        rank = int(item.split(b"=")[1])
            found[int(pid)] = rank
        except (OSError, ValueError, IndexError):
            continue
    return found


def rss(pid):
    """(RssAnon, RssFile) of pid in MiB, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except OSError:
        return None
    values = {k: int(v) / 1024 for k, v in re.findall(r"^(RssAnon|RssFile):\s+(\d+) kB", text, re.M)}
    return values.get("RssAnon", 0), values.get("RssFile", 0)


def run(command, env):
    """Runs one job; returns (stdout + stderr, {rank: (anon, file)} MiB
    resident while it decodes)."""
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=env)
    samples = {}
    done = threading.Event()

    def sample():
        while not done.is_set():
            for pid, rank in rank_processes(job.pid).items():
                value = rss(pid)
                if value:
                    samples.setdefault(rank, []).append(value)
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out, _ = job.communicate()
    done.set()
    sampler.join()
    if job.returncode != 0:
        sys.exit(f"{' '.join(command)}: exit {job.returncode}\n{out}")
    # Per rank: its largest RssAnon (packed weights, KV cache and scratch
    # are all there once it decodes), and RssFile at the last sample that
    # large: while it decodes, after loading (which reads the whole
    # checkpoint) released the pages only packing needed.
    resident = {}
    for rank, values in samples.items():
        anon = max(v[0] for v in values)
        decoding = [v for v in values if v[0] >= 0.99 * anon]
        resident[rank] = (anon, decoding[-1][1])
    return out, resident


def spread(values, unit=""):
    return (f"{statistics.median(values):.1f}{unit} "
            f"({min(values):.1f}-{max(values):.1f})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--ranks", default="1,2,4")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin"))
    args = parser.parse_args()
    ranks = [int(r) for r in args.ranks.split(",")]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    attn_run = os.path.join(args.bin, "attn-run")
    prompt = ",".join(str((i * 37 + 11) % 1000) for i in range(16))

    def command(n):
        base = [attn_run, args.model, "--tokens", prompt, "-n", str(args.tokens), "--ignore-eos"]
        if n == 1:
            return base
        return ["mpirun", "-np", str(n), "--oversubscribe", "--bind-to", "none", *base]

    for n in ranks:  # compile (cached), untimed
        run(command(n), env)
    rates = {n: [] for n in ranks}
    shares = {n: [] for n in ranks}
    memory = {n: [] for n in ranks}
    for round_ in range(args.rounds):
        for n in ranks:
            out, peaks = run(command(n), env)
            rate = float(re.search(r"^decode: \d+ tokens in [\d.]+ ms \(([\d.]+) tok/s\)", out, re.M).group(1))
            rates[n].append(rate)
            share = re.search(r"^tensor parallel: \d+ ranks; decode spent [\d.]+ ms \(([\d.]+)%\)", out, re.M)
            shares[n].append(float(share.group(1)) if share else 0.0)
            memory[n].append(peaks)
            print(f"round {round_ + 1}, {n} rank(s): {rate:.1f} tok/s", file=sys.stderr)

    print(f"model {args.model}, {args.tokens} tokens after a 16-token prompt, "
          f"{args.rounds} interleaved rounds, medians (range)")
    print("| ranks | decode tok/s | ms/token | in collectives (rank 0) | RssAnon per rank MiB | RssFile per rank MiB |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in ranks:
        anon = [peak[0] for peaks in memory[n] for peak in peaks.values()]
        mapped = [peak[1] for peaks in memory[n] for peak in peaks.values()]
        ms = [1000.0 / r for r in rates[n]]
        print(f"| {n} | {spread(rates[n])} | {spread(ms)} | {spread(shares[n], '%')} | "
              f"{spread(anon)} | {spread(mapped)} |")


if __name__ == "__main__":
    main()
