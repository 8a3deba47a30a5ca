"""What the attn-serve tests share: the model fixture check, a server started
on a free loopback port (attn-serve --port 0 prints the one it took) and
always stopped, and small HTTP helpers over http.client (no third-party
modules: Debian's python3 has no requests).

Every test script takes --bin BIN_DIR (attn-serve, attn-run, attn-compile)
and --model MODEL_DIR (made by make-model.sh, the fixture); it exits 77
(skipped) when the fixture was skipped, except under CI=true.
"""

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading

SKIP = 77
CONTEXT = 2048


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def parse_args(description, extra=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bin", required=True, help="the build's bin directory")
    parser.add_argument("--model", required=True, help="the fixture's model folder")
    if extra:
        extra(parser)
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.model, ".ready")):
        if os.environ.get("CI") == "true":
            fail(f"{args.model} was not made (the serve-model fixture failed or was "
                 "skipped): CI must run this test")
        print(f"skipped: {args.model} is missing (the serve-model fixture was skipped)")
        sys.exit(SKIP)
    return args


class Server:
    """attn-serve MODEL --port 0 [args], until stop() (or the end of a with)."""

    def __init__(self, bin_dir, model, *args, startup=120, launcher=()):
        """`launcher`: a command the server runs under (mpirun -np N ...)."""
        self.bin = bin_dir
        command = [*launcher, os.path.join(bin_dir, "attn-serve"), model, "--port", "0",
                   "--compiler", os.path.join(bin_dir, "attn-compile"),
                   "--ctx", str(CONTEXT), *args]
        self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.lines = []
        self.port = None
        ready = threading.Event()

        # Drains stderr for the whole run (a full pipe would block the server).
        def read():
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self.lines.append(line)
                match = re.search(r"listening on http://[^:]+:(\d+)", line)
                if match:
                    self.port = int(match.group(1))
                    ready.set()
            ready.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not ready.wait(startup) or self.port is None:
            self.kill()
            fail("attn-serve did not start:\n" + self.log())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()

    def log(self):
        return "\n".join(self.lines[-40:])

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def leader(self):
        """Under a launcher: the pid of the job's rank 0 (its environment
        says OMPI_COMM_WORLD_RANK=0), else the server's."""
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{pid}/environ", "rb") as f:
                    environ = f.read().split(b"\0")
            except (OSError, ValueError, IndexError):
                continue
            if parent == self.proc.pid and b"OMPI_COMM_WORLD_RANK=0" in environ:
                return int(pid)
        return self.proc.pid

    def stop(self, timeout=30):
        """SIGTERM (to rank 0 under a launcher: the group then ends on its
        own), and the exit code (it must come within `timeout` s)."""
        os.kill(self.leader(), signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            fail(f"attn-serve did not exit within {timeout} s of SIGTERM")

    def connect(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, headers, body bytes) of one request on its own connection."""
        connection = self.connect(timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            if isinstance(body, str):
                body = body.encode()
            all_headers = {"Content-Type": "application/json"}
            all_headers.update(headers or {})
            connection.request(method, path, body=body, headers=all_headers)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def post(self, path, body, headers=None, timeout=60):
        """(status, parsed JSON body)."""
        status, _, data = self.request("POST", path, body, headers, timeout)
        try:
            return status, json.loads(data)
        except ValueError:
            fail(f"POST {path}: the body is not JSON: {data[:200]!r}")

    def get(self, path, headers=None):
        status, _, data = self.request("GET", path, None, headers)
        return status, data

    def stream(self, path, body, headers=None, timeout=120):
        """The parsed `data:` events of a streamed request, up to [DONE]."""
        connection = self.connect(timeout)
        try:
            all_headers = {"Content-Type": "application/json"}
            all_headers.update(headers or {})
            connection.request("POST", path, body=json.dumps(body), headers=all_headers)
            response = connection.getresponse()
            if response.status != 200:
                fail(f"stream {path}: status {response.status}: {response.read()[:300]!r}")
            check(response.getheader("Content-Type", "").startswith("text/event-stream"),
                  f"stream {path}: Content-Type {response.getheader('Content-Type')}")
            events = []
            for raw in response:
                line = raw.decode("utf-8").rstrip("\n")
                if not line:
                    continue
                check(line.startswith("data: "), f"stream {path}: unexpected line {line!r}")
                payload = line[len("data: "):]
                if payload == "[DONE]":
                    return events
                events.append(json.loads(payload))
            fail(f"stream {path}: ended without data: [DONE]")
        finally:
            connection.close()

    def metrics(self, headers=None):
        status, data = self.get("/metrics", headers)
        check(status == 200, f"/metrics: status {status}")
        values = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.split()
                values[name[len("attn_"):]] = float(value)
        return values

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        fail("no VmRSS in /proc/PID/status")


def stream_text(events, chat=False):
    """The text of a stream's chunks and its finish reason."""
    text, finish = "", None
    for event in events:
        check("error" not in event, f"stream error event: {event}")
        for choice in event.get("choices", []):
            if chat:
                text += choice["delta"].get("content", "") or ""
            else:
                text += choice["text"]
            finish = choice["finish_reason"] or finish
    return text, finish


def attn_run(bin_dir, model, prompt, tokens):
    """attn-run's greedy continuation of `prompt` (its stdout is the prompt,
    the continuation and a newline)."""
    out = subprocess.run(
        [os.path.join(bin_dir, "attn-run"), model, "--compiler",
         os.path.join(bin_dir, "attn-compile"), "--ctx", str(CONTEXT), "-p", prompt,
         "-n", str(tokens), "--temperature", "0"],
        check=True, capture_output=True, timeout=120).stdout.decode("utf-8")
    check(out.startswith(prompt) and out.endswith("\n"), f"attn-run printed {out!r}")
    return out[len(prompt):-1]
