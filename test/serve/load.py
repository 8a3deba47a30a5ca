"""A bounded load test: 32 concurrent clients x 64 tokens on 8 slots (so 24
wait in the queue at first), half of them streaming, sampled with their
own seeds. Every request must succeed with 64 tokens (or end at the end of
sequence), none may be lost, and the server's counters must agree: 32
admitted, 32 finished, nothing failed, cancelled or rejected.
"""

import threading
import time

from serve_harness import Server, check, parse_args, stream_text

CLIENTS = 32
TOKENS = 64


def main():
    args = parse_args(__doc__)
    with Server(args.bin, args.model, "--parallel", "8", "--queue", "64") as server:
        results = [None] * CLIENTS
        errors = []
        start = threading.Barrier(CLIENTS)

        def client(i):
            body = {"prompt": f"Chapter {i}. It was", "max_tokens": TOKENS,
                    "temperature": 0.8, "top_p": 0.95, "seed": i}
            try:
                start.wait()
                if i % 2:
                    body["stream"] = True
                    body["stream_options"] = {"include_usage": True}
                    events = server.stream("/v1/completions", body)
                    text, finish = stream_text(events)
                    usage = events[-1]["usage"]
                else:
                    status, answer = server.post("/v1/completions", body)
                    if status != 200:
                        raise RuntimeError(f"status {status}: {answer}")
                    text = answer["choices"][0]["text"]
                    finish = answer["choices"][0]["finish_reason"]
                    usage = answer["usage"]
                results[i] = (text, finish, usage)
            except BaseException as e:  # a failed check exits: record it instead
                errors.append(f"client {i}: {e!r}")

        begin = time.monotonic()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(240)
        seconds = time.monotonic() - begin
        check(not errors, "\n".join(errors))
        for i, result in enumerate(results):
            check(result is not None, f"client {i} got no answer (lost request)")
            text, finish, usage = result
            tokens = usage["completion_tokens"]
            check(finish == "length" and tokens == TOKENS or finish == "stop" and tokens <= TOKENS,
                  f"client {i}: finish_reason {finish} after {tokens} tokens")
            check(text, f"client {i}: no text")

        # The same seed gives the same text, whatever the batch around it.
        status, again = server.post("/v1/completions", {
            "prompt": "Chapter 0. It was", "max_tokens": TOKENS, "temperature": 0.8,
            "top_p": 0.95, "seed": 0})
        check(status == 200 and again["choices"][0]["text"] == results[0][0],
              "seed 0 alone differs from seed 0 under load")

        m = server.metrics()
        check(m["requests_admitted_total"] == CLIENTS + 1 and
              m["requests_finished_total"] == CLIENTS + 1,
              f"counters: {m}")
        check(m["requests_failed_total"] == 0 and m["requests_cancelled_total"] == 0 and
              m["requests_rejected_total"] == 0, f"counters: {m}")
        check(m["slots_busy"] == 0 and m["requests_queued"] == 0, f"counters: {m}")
        batch = m["decode_tokens_total"] / m["decode_steps_total"]
        check(batch > 4, f"at most 8 slots, mostly full: {batch:.1f} sessions per step")
        code = server.stop()
        check(code == 0, f"attn-serve exited with {code}:\n{server.log()}")
    total = sum(r[2]["completion_tokens"] for r in results)
    print(f"ok: {CLIENTS} clients, {total} tokens in {seconds:.2f} s "
          f"({total / seconds:.0f} tok/s), {batch:.1f} sessions per decode step")


if __name__ == "__main__":
    main()
