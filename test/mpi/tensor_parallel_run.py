#!/usr/bin/env python3
"""attn-run under mpirun: N-way tensor parallel against one process.

  tensor_parallel_run.py BIN_DIR MODE -- MPIRUN [FLAGS...]

BIN_DIR holds attn-run, attn-compile and attn-make-model; MODE is one of

  logits    GPT-2 (vocabulary 97: the last rank's slice is padded) and a
            LLaMA with 8 query heads over 4 KV heads, each run alone and
            under `mpirun -np 2` and `-np 4` (oversubscribed): the greedy
            tokens must be identical and every --dump-logits row within
            1e-5 of the single process's, relative to the row's largest
            logit; only rank 0 prints.
  indivisible  `-np 3` on a model of 4 heads ends at once with the
            compiler's message naming the heads.
  hang      rank 1 is stopped (SIGSTOP) while decoding: rank 0's collective
            misses its 3 s deadline and the job ends, non-zero, within 30 s.
  die       rank 1 is killed (SIGKILL) while decoding: the job ends,
            non-zero, within 30 s.
  perplexity SHARED_DIR: the trained austen-llama (6 heads over 2 KV heads)
            and austen-gpt2 (vocabulary 50257, tied: a padded slice) of
            ../shared score Persuasion with attn-perplexity alone
            (--save-logits) and under `mpirun -np 2` (--kl-divergence
            against it): the same perplexity to 1e-5, mean KL below 1e-6,
            the same top-1 token at (nearly) every position. Skipped (77)
            without SHARED_DIR's models, except under CI=true.

Models are written by attn-make-model into a temporary folder and compiled
on first use by attn-run (one library per rank count, cached there).
"""

import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time

TOLERANCE = 1e-5


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def read_npy(path):
    """A float32 C-order .npy as (shape, values)."""
    with open(path, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            fail(f"{path}: not a .npy file")
        major = f.read(2)[0]
        size = struct.unpack("<H" if major == 1 else "<I", f.read(2 if major == 1 else 4))[0]
        header = f.read(size).decode("latin1")
        if "'<f4'" not in header or "True" in header.split("fortran_order")[1][:8]:
            fail(f"{path}: not little-endian float32 in C order: {header}")
        shape = tuple(int(d) for d in re.search(r"\(([^)]*)\)", header).group(1).split(",") if d.strip())
        data = f.read()
    count = len(data) // 4
    return shape, struct.unpack(f"<{count}f", data)


def worst_row_error(actual, expected):
    (rows, vocab), a = actual
    (rows2, vocab2), e = expected
    if (rows, vocab) != (rows2, vocab2):
        fail(f"logits of shape {(rows, vocab)} but the single process wrote {(rows2, vocab2)}")
    worst = 0.0
    for r in range(rows):
        row_a, row_e = a[r * vocab:(r + 1) * vocab], e[r * vocab:(r + 1) * vocab]
        scale = max(1.0, max(abs(v) for v in row_e))
        worst = max(worst, max(abs(x - y) for x, y in zip(row_a, row_e)) / scale)
    return worst


class Runner:
    def __init__(self, bin_dir, mpirun, work):
        self.bin_dir, self.mpirun, self.work = bin_dir, mpirun, work
        self.env = dict(os.environ, ATTN_COMPILE=os.path.join(bin_dir, "attn-compile"))

    def tool(self, name):
        return os.path.join(self.bin_dir, name)

    def make_model(self, name, *options):
        folder = os.path.join(self.work, name)
        subprocess.run([self.tool("attn-make-model"), "--out", folder, *options],
                       check=True, stdout=subprocess.DEVNULL)
        return folder

    def run(self, ranks, args, **popen):
        command = [self.tool("attn-run"), *args]
        if ranks > 0:
            command = [*self.mpirun, "-np", str(ranks), *command]
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=self.env, start_new_session=True, **popen)

    def finish(self, job, seconds, what):
        try:
            out, err = job.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.communicate()
            fail(f"{what}: still running after {seconds} s")
        return job.returncode, out, err


def prompt(n, vocab):
    return ",".join(str((i * 37 + 11) % vocab) for i in range(n))


def check_logits(runner):
    models = [
        ("gpt2", ["--preset", "tiny-gpt2", "--sharp"], 97),
        ("llama", ["--preset", "tiny-llama", "--heads", "8", "--kv-heads", "4", "--sharp"], 101),
    ]
    for name, options, vocab in models:
        folder = runner.make_model(name, *options)
        args = [folder, "--tokens", prompt(40, vocab), "-n", "8"]
        single = os.path.join(runner.work, f"{name}-1.npy")
        code, out, err = runner.finish(runner.run(0, [*args, "--dump-logits", single]), 300,
                                       f"{name} alone")
        if code != 0:
            fail(f"{name} alone: exit {code}\n{err}")
        tokens = re.findall(r"^generated:.*$", out, re.M)
        for ranks in (2, 4):
            dump = os.path.join(runner.work, f"{name}-{ranks}.npy")
            code, out, err = runner.finish(runner.run(ranks, [*args, "--dump-logits", dump]),
                                           300, f"{name} on {ranks} ranks")
            if code != 0:
                fail(f"{name} on {ranks} ranks: exit {code}\n{err}")
            generated = re.findall(r"^generated:.*$", out, re.M)
            if generated != tokens:
                fail(f"{name} on {ranks} ranks generated {generated}, alone {tokens} "
                     "(exactly one line, from rank 0)")
            if not re.search(rf"^tensor parallel: {ranks} ranks;", out, re.M):
                fail(f"{name} on {ranks} ranks: no tensor-parallel line in\n{out}")
            error = worst_row_error(read_npy(dump), read_npy(single))
            print(f"{name}, {ranks} ranks: {tokens[0]}; worst row error {error:.3g}")
            if not error <= TOLERANCE:
                fail(f"{name} on {ranks} ranks: logits differ by {error:.3g} (> {TOLERANCE})")


def check_indivisible(runner):
    folder = runner.make_model("llama4", "--preset", "tiny-llama", "--kv-heads", "4")
    start = time.monotonic()
    code, out, err = runner.finish(runner.run(3, [folder, "--tokens", "1,2,3", "-n", "2"]), 120,
                                   "3 ranks of 4 heads")
    message = "3 ranks do not divide the attention heads (4)"
    if code == 0 or message not in err:
        fail(f"3 ranks of 4 heads: exit {code}, stderr without '{message}':\n{err}")
    print(f"3 ranks of 4 heads: exit {code} in {time.monotonic() - start:.1f} s: {message}")


def rank_pid(job, rank):
    """The pid of rank `rank` among the job's processes (its environment
    says OMPI_COMM_WORLD_RANK), or None."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[3]) != job.pid:
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"OMPI_COMM_WORLD_RANK={rank}".encode() in f.read().split(b"\0"):
                    return int(pid)
        except (OSError, IndexError, ValueError):
            continue
    return None


def check_failure(runner, sig):
    folder = runner.make_model("long", "--preset", "tiny-llama")
    # Compiled first, so that the job below is decoding when the signal comes.
    # 32000 tokens take far longer than the second before the signal.
    context = ["--ctx", "32768"]
    code, _, err = runner.finish(runner.run(2, [folder, *context, "--tokens", "1,2", "-n", "1"]),
                                 300, "compiling")
    if code != 0:
        fail(f"compiling: exit {code}\n{err}")
    runner.env["ATTN_TP_TIMEOUT"] = "3"
    job = runner.run(2, [folder, *context, "--tokens", "1,2,3", "-n", "32000", "--ignore-eos"])
    time.sleep(1.5)
    pid = rank_pid(job, 1)
    if pid is None:
        os.killpg(job.pid, signal.SIGKILL)
        fail("rank 1 of the job not found")
    os.kill(pid, sig)
    start = time.monotonic()
    code, out, err = runner.finish(job, 30, f"after signal {sig} to rank 1")
    elapsed = time.monotonic() - start
    if sig == signal.SIGSTOP:
        os.kill(pid, signal.SIGKILL) if os.path.exists(f"/proc/{pid}") else None
        expected = r"attn: rank 0 of 2: all-(reduce|gather) of \d+ floats( per rank)? waited 3 s"
        if not re.search(expected, err):
            fail(f"rank 1 stopped: no timeout message from rank 0:\n{err}")
    if code == 0:
        fail(f"signal {sig} to rank 1: the job exited 0")
    if "decode:" in out:
        fail(f"signal {sig} to rank 1: rank 0 finished decoding:\n{out}")
    print(f"signal {sig} to rank 1: the job ended with exit {code} {elapsed:.1f} s later")


def check_perplexity(runner, shared):
    text = os.path.join(shared, "text", "persuasion.txt")
    for name in ("austen-llama", "austen-gpt2"):
        source = os.path.join(shared, "models", name)
        if not os.path.exists(os.path.join(source, "config.json")):
            if os.environ.get("CI") == "true":
                fail(f"{source} is missing: CI must run this test")
            print(f"skipped: {source} is missing")
            sys.exit(77)
        base = os.path.join(runner.work, f"{name}.logp")
        # A cache of this test's own (the shared folder may be read-only).
        args = [runner.tool("attn-perplexity"), source, "-f", text, "--ctx", "128",
                "--chunks", "6", "--cache-dir", os.path.join(runner.work, "cache")]
        alone = subprocess.run([*args, "--save-logits", base], capture_output=True, text=True,
                               env=runner.env, timeout=300)
        if alone.returncode != 0:
            fail(f"{name} alone: exit {alone.returncode}\n{alone.stderr}")
        split = subprocess.run([*runner.mpirun, "-np", "2", *args, "--kl-divergence", base],
                               capture_output=True, text=True, env=runner.env, timeout=300)
        if split.returncode != 0:
            fail(f"{name} on 2 ranks: exit {split.returncode}\n{split.stderr}")
        ratio = float(re.search(r"ratio ([\d.]+)", split.stdout).group(1))
        kl = float(re.search(r"kl divergence: mean ([\d.e-]+)", split.stdout).group(1))
        top1 = float(re.search(r"top-1 agreement: ([\d.]+)%", split.stdout).group(1))
        print(f"{name}, 2 ranks: {split.stdout.splitlines()[0]}; ratio {ratio}, "
              f"mean KL {kl}, top-1 {top1}%")
        if abs(ratio - 1) > 1e-5 or kl > 1e-6 or top1 < 99.9:
            fail(f"{name} on 2 ranks differs from one process:\n{split.stdout}")


def main():
    split = sys.argv.index("--")
    bin_dir, mode, *extra = sys.argv[1:split]
    mpirun = sys.argv[split + 1:]
    with tempfile.TemporaryDirectory(prefix="attn-tp-") as work:
        runner = Runner(bin_dir, mpirun, work)
        if mode == "logits":
            check_logits(runner)
        elif mode == "indivisible":
            check_indivisible(runner)
        elif mode == "hang":
            check_failure(runner, signal.SIGSTOP)
        elif mode == "die":
            check_failure(runner, signal.SIGKILL)
        elif mode == "perplexity":
            check_perplexity(runner, extra[0])
        else:
            fail(f"unknown mode {mode}")
    print("PASS")


if __name__ == "__main__":
    main()
