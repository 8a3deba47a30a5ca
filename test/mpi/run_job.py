#!/usr/bin/env python3
"""Runs an MPI job that must fail (a rank hangs or dies) and checks how.

  run_job.py --max-seconds S [--stderr REGEX]... [--not-stderr REGEX]...
             -- mpirun ... attnrt-mpi-test MODE

Passes when the job exits non-zero within S seconds, its stderr matches
every --stderr and no --not-stderr, and none of the ranks (each prints
"pid P" first) is left running or stopped afterwards. A job still running
after S seconds is killed and fails the test.
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time


def alive(pid):
    """True while rank process pid runs or is stopped (not a zombie, and
    not another program that reused the pid)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            ours = b"attnrt-mpi-test" in f.read()
    except (OSError, IndexError):
        return False
    return state != "Z" and ours


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-seconds", type=float, required=True)
    parser.add_argument("--stderr", action="append", default=[])
    parser.add_argument("--not-stderr", action="append", default=[])
    # Everything after "--" is the job, taken as it is.
    split = sys.argv.index("--") if "--" in sys.argv else len(sys.argv)
    args = parser.parse_args(sys.argv[1:split])
    args.command = sys.argv[split + 1:]
    if not args.command:
        parser.error("no job after --")

    start = time.monotonic()
    # A session of its own, so that everything mpirun starts can be killed.
    job = subprocess.Popen(args.command, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    errors = []
    try:
        out, err = job.communicate(timeout=args.max_seconds)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        out, err = job.communicate()
        errors.append(f"the job still ran after {args.max_seconds:g} s")
    elapsed = time.monotonic() - start
    sys.stdout.write(out)
    sys.stderr.write(err)
    print(f"run_job: exit status {job.returncode} after {elapsed:.1f} s")

    if job.returncode == 0:
        errors.append("the job exited 0")
    for pattern in args.stderr:
        if not re.search(pattern, err, re.M):
            errors.append(f"stderr lacks /{pattern}/")
    for pattern in args.not_stderr:
        if re.search(pattern, err, re.M):
            errors.append(f"stderr has /{pattern}/")

    pids = [int(p) for p in re.findall(r"^pid (\d+)$", out, re.M)]
    if not pids:
        errors.append("no rank printed its pid")
    # mpirun has exited: give the ranks it signalled a moment to go.
    deadline = time.monotonic() + 5
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in filter(alive, pids):
        errors.append(f"rank process {pid} was left behind")
        os.kill(pid, signal.SIGKILL)
    try:
        os.killpg(job.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass

    for e in errors:
        print(f"run_job: FAILED: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
