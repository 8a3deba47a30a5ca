"""attn-serve under bad input and bad clients, with --api-key (every request
here sends it unless the check is about the key):

  - malformed JSON, wrong types (400 naming the field), unknown fields
    (ignored), refused fields (n > 1), a prompt over the context and
    max_tokens over it (400, context_length_exceeded), a body over the limit
    with Content-Length and chunked (413), a malformed HTTP request, an
    unknown path (404), each with an OpenAI-shaped error body;
  - a missing or wrong API key (401; /health needs none);
  - a client that vanishes mid-stream on a single slot: its slot is freed at
    once (the next request runs long before the vanished one would have
    ended, and the server counts it cancelled);
  - 200 idle connections, half of them with half a request: the server keeps
    answering meanwhile, and once they are gone its connection threads and
    its RSS (/proc/PID/status) come back near their baseline;
  - SIGTERM during a stream: the stream still ends with data: [DONE] and the
    server exits 0.
"""

import json
import socket
import time

from serve_harness import CONTEXT, Server, check, parse_args

KEY = "sk-attn-test"
AUTH = {"Authorization": "Bearer " + KEY}
LIMIT = 64 * 1024


def error_of(status, body, want_status, param=None, code=None):
    """Checks an OpenAI-shaped error response; returns its message."""
    check(status == want_status, f"status {status}, expected {want_status}: {body}")
    check(isinstance(body, dict) and set(body) == {"error"}, f"not an error body: {body}")
    error = body["error"]
    check(set(error) == {"message", "type", "param", "code"}, f"error fields: {error}")
    check(isinstance(error["message"], str) and error["message"], f"no message: {error}")
    check(isinstance(error["type"], str), f"type: {error}")
    if param is not None:
        check(error["param"] == param, f"param {error['param']!r}, expected {param!r}")
    if code is not None:
        check(error["code"] == code, f"code {error['code']!r}, expected {code!r}")
    return error["message"]


def raw_exchange(port, data, timeout=10):
    """Sends raw bytes, returns (status, parsed body) of the response."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = s.recv(65536)
            check(chunk, f"connection closed before a response: {received!r}")
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        status = int(head.split(b" ")[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, json.loads(body[:length])


def requests(server):
    post = server.post
    # Malformed JSON and the body's type.
    error_of(*post("/v1/completions", '{"prompt": "x", ', AUTH), 400)
    error_of(*post("/v1/completions", '[1, 2]', AUTH), 400)
    error_of(*post("/v1/chat/completions", 'not json', AUTH), 400)
    error_of(*post("/tokenize", '{', AUTH), 400)
    # Wrong types name the field.
    message = error_of(*post("/v1/completions", {"prompt": "x", "max_tokens": "5"}, AUTH), 400,
                       param="max_tokens")
    check("max_tokens" in message, message)
    error_of(*post("/v1/completions", {"prompt": 42}, AUTH), 400, param="prompt")
    error_of(*post("/v1/completions", {"prompt": "x", "temperature": "hot"}, AUTH), 400,
             param="temperature")
    error_of(*post("/v1/completions", {"prompt": "x", "stop": [1]}, AUTH), 400, param="stop[0]")
    error_of(*post("/v1/completions", {"prompt": "x", "stream": 1}, AUTH), 400, param="stream")
    error_of(*post("/v1/chat/completions", {"messages": "hi"}, AUTH), 400, param="messages")
    error_of(*post("/detokenize", {"tokens": [1, "a"]}, AUTH), 400, param="tokens[1]")
    error_of(*post("/detokenize", {"tokens": [99999999]}, AUTH), 400)
    error_of(*post("/v1/completions", {"prompt": [1, 99999999]}, AUTH), 400, param="prompt")
    # Refused, not ignored.
    error_of(*post("/v1/completions", {"prompt": "x", "n": 2}, AUTH), 400, param="n",
             code="unsupported_parameter")
    error_of(*post("/v1/completions", {"prompt": "x", "logprobs": 3}, AUTH), 400,
             param="logprobs")
    # Unknown fields are ignored, as OpenAI ignores them.
    status, body = post("/v1/completions", {"prompt": "x", "max_tokens": 2, "temperature": 0,
                                            "frobnicate": {"a": [1]}, "mirostat": 2}, AUTH)
    check(status == 200 and body["usage"]["completion_tokens"] == 2, f"{status} {body}")

    # This model has no chat template (and no --chat-template was given).
    error_of(*post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}]},
                   AUTH), 400, param="messages", code="no_chat_template")

    # The context: a prompt over it, and max_tokens over what is left.
    long_prompt = "Emma " * (CONTEXT + 100)
    error_of(*post("/v1/completions", {"prompt": long_prompt}, AUTH), 400, param="prompt",
             code="context_length_exceeded")
    error_of(*post("/v1/completions", {"prompt": "x", "max_tokens": CONTEXT}, AUTH), 400,
             param="max_tokens", code="context_length_exceeded")
    error_of(*post("/v1/completions", {"prompt": "x", "max_tokens": 10 ** 12}, AUTH), 400,
             param="max_tokens")
    # Exactly what fits is fine: the prompt "x" is 2 tokens with BOS.
    status, body = post("/v1/completions", {"prompt": [1, 2], "max_tokens": CONTEXT - 2,
                                            "temperature": 0, "stop": "\u2603"}, AUTH)
    check(status == 200, f"a prompt that just fits: {status} {body}")

    # Bodies over the limit: with Content-Length, and chunked.
    big = json.dumps({"prompt": "x" * (LIMIT + 1000)})
    error_of(*post("/v1/completions", big, AUTH), 413)
    head = (f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    piece = b"x" * 8192
    chunks = b"".join(b"2000\r\n" + piece + b"\r\n" for _ in range(LIMIT // len(piece) + 2))
    error_of(*raw_exchange(server.port, head.encode() + chunks), 413)
    # Malformed HTTP, an unknown path.
    error_of(*raw_exchange(server.port, b"NONSENSE\r\n\r\n"), 400)
    status, _, data = server.request("GET", "/v1/nothing", headers=AUTH)
    error_of(status, json.loads(data), 404)

    # The key.
    error_of(*post("/v1/completions", {"prompt": "x"}), 401, code="invalid_api_key")
    error_of(*post("/v1/completions", {"prompt": "x"}, {"Authorization": "Bearer wrong"}),
             401, code="invalid_api_key")
    error_of(*post("/v1/completions", {"prompt": "x"}, {"Authorization": KEY}), 401)
    status, data = server.get("/v1/models")
    error_of(status, json.loads(data), 401)
    # The key is checked before the body is read: a huge one is not needed.
    error_of(*post("/v1/completions", big), 401)
    status, data = server.get("/health")
    check(status == 200 and json.loads(data) == {"status": "ok"}, f"/health: {status} {data}")
    status, data = server.get("/v1/models", AUTH)
    check(status == 200 and json.loads(data)["data"][0]["object"] == "model", f"{data}")


def vanishing_client(server):
    """A stream that goes away on the single slot: the next request runs."""
    before = server.metrics(AUTH)
    body = json.dumps({"prompt": "Emma", "max_tokens": CONTEXT - 10, "temperature": 0,
                       "stream": True})
    s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    s.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
               + body).encode())
    received = b""
    while received.count(b"data: ") < 2:
        chunk = s.recv(4096)
        check(chunk, "the stream ended early")
        received += chunk
    s.close()
    start = time.monotonic()
    status, answer = server.post("/v1/completions", {"prompt": "Anne", "max_tokens": 4},
                                 AUTH, timeout=30)
    seconds = time.monotonic() - start
    check(status == 200, f"the next request: {status} {answer}")
    after = server.metrics(AUTH)
    check(after["requests_cancelled_total"] == before["requests_cancelled_total"] + 1,
          f"the vanished stream was not cancelled: {after}")
    generated = after["generated_tokens_total"] - before["generated_tokens_total"] - 4
    check(generated < (CONTEXT - 10) / 2,
          f"the vanished stream ran on for {generated} tokens")
    check(after["slots_busy"] == 0, f"a slot is still busy: {after}")
    return seconds, generated


def idle_connections(server, count=200):
    """`count` idle connections, half with half a request, while requests go on."""
    idle = []
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        if i % 2:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
        idle.append(s)
    time.sleep(0.5)
    threads_busy = server.metrics(AUTH)["http_threads"]
    latencies = []
    for i in range(5):
        start = time.monotonic()
        status, body = server.post("/v1/completions",
                                   {"prompt": "Fanny", "max_tokens": 8, "stream": False},
                                   AUTH, timeout=30)
        latencies.append(time.monotonic() - start)
        check(status == 200, f"with {count} idle connections: {status} {body}")
    check(max(latencies) < 3, f"requests stalled behind idle connections: {latencies}")
    # Half go away now, the others are timed out by the server.
    for s in idle[: count // 2]:
        s.close()
    return threads_busy, latencies, idle[count // 2:]


def warm_up(server):
    body = {"prompt": "Emma", "max_tokens": 16}
    status, answer = server.post("/v1/completions", body, AUTH)
    check(status == 200, f"{status} {answer}")
    server.stream("/v1/completions", {**body, "stream": True}, AUTH)


def main():
    def extra(parser):
        parser.add_argument("--no-rss", action="store_true",
                            help="skip the RSS check (sanitizers keep shadow memory per thread)")
    args = parse_args(__doc__, extra)
    with Server(args.bin, args.model, "--api-key", KEY, "--parallel", "1", "--max-body",
                str(LIMIT), "--timeout", "4", "--keep-alive", "4", "--quiet") as server:
        # The baseline: after every kind of request has run once.
        warm_up(server)
        requests(server)
        baseline_rss = server.rss_kib()
        baseline_threads = server.metrics(AUTH)["http_threads"]

        seconds, generated = vanishing_client(server)
        threads_busy, latencies, left = idle_connections(server)
        check(threads_busy >= 150, f"the idle connections should hold threads: {threads_busy}")
        # Connection threads beyond --parallel + 4 retire once idle for 10 s;
        # the half-requests time out after --timeout 4.
        kept = max(baseline_threads, 1 + 4)
        deadline = time.monotonic() + 60
        while True:
            m = server.metrics(AUTH)
            if m["http_threads"] <= kept + 1:
                break
            check(time.monotonic() < deadline,
                  f"connection threads did not come back: {m['http_threads']}")
            time.sleep(1)
        for s in left:
            s.close()
        warm_up(server)
        rss = server.rss_kib()
        check(args.no_rss or rss < baseline_rss + 8 * 1024,
              f"RSS {rss} KiB did not come back near its baseline {baseline_rss} KiB")

        # SIGTERM while a stream runs: it ends properly, the server exits 0.
        connection = server.connect(30)
        connection.request("POST", "/v1/completions", body=json.dumps(
            {"prompt": "Emma", "max_tokens": 600, "stream": True}),
            headers={**AUTH, "Content-Type": "application/json"})
        response = connection.getresponse()
        check(response.status == 200, f"stream before SIGTERM: {response.status}")
        first = response.readline()
        check(first.startswith(b"data: "), f"{first!r}")
        code = server.stop()
        rest = response.read().decode()
        check(rest.rstrip().endswith("data: [DONE]"), f"the stream did not end: {rest[-200:]!r}")
        check(code == 0, f"attn-serve exited with {code}:\n{server.log()}")
    print(f"ok: vanished stream cancelled after {generated:.0f} tokens, next request "
          f"{seconds * 1e3:.0f} ms; 200 idle connections held {threads_busy:.0f} threads, "
          f"requests meanwhile <= {max(latencies) * 1e3:.0f} ms; RSS {baseline_rss} -> {rss} KiB")


if __name__ == "__main__":
    main()
