"""Greedy outputs through attn-serve equal attn-run's, for one client at a
time and for 16 concurrent ones (half of them streaming): batching, chunked
prefill and slot reuse must not change a single token.

The prompts differ in length so that the batched sessions sit at different
positions; two are longer than the server's --prefill-chunk (16 here), so
they are prefilled over several steps while the others decode.

With --launcher "mpirun -np 2 ..." the server is a tensor-parallel group
(rank 0 serves, the other ranks follow its model calls) and must answer
exactly the same; --idle S waits S seconds between the two parts, longer
than the group's collective deadline, which the heartbeat must keep.

With --gguf the server runs the fixture's MODEL.gguf (the same model and
tokenizer in one GGUF file) and must answer what attn-run answers with the
folder.
"""

import shlex
import threading
import time

from serve_harness import Server, attn_run, check, parse_args, stream_text

TOKENS = 24

BASE = ["It is a truth universally acknowledged", "Emma Woodhouse, handsome, clever",
        "The family of Dashwood had long been settled in Sussex", "No one", "Sir Walter",
        "Mr. Darcy", "Catherine Morland", "Fanny Price", "A", "She was the youngest",
        "Anne Elliot", "The Miss Bertrams", "What", "Colonel Brandon", "Mrs. Jennings",
        "Her father"]
# Two long ones (about 60 and 120 tokens): several prefill chunks each.
PROMPTS = BASE[:14] + [
    " ".join(BASE[:8]) + ".",
    " ".join(BASE * 2) + ".",
]


def complete(server, prompt, stream):
    body = {"model": "tiny", "prompt": prompt, "max_tokens": TOKENS, "temperature": 0}
    if stream:
        body["stream"] = True
        text, finish = stream_text(server.stream("/v1/completions", body))
        return text, finish
    status, answer = server.post("/v1/completions", body)
    check(status == 200, f"status {status}: {answer}")
    choice = answer["choices"][0]
    usage = answer["usage"]
    check(usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"],
          f"usage {usage}")
    return choice["text"], choice["finish_reason"]


def main():
    def options(parser):
        parser.add_argument("--launcher", default="", help="command to run attn-serve under")
        parser.add_argument("--idle", type=float, default=0, help="seconds between the parts")
        parser.add_argument("--gguf", action="store_true", help="serve MODEL.gguf, beside it")

    args = parse_args(__doc__, options)
    expected = [attn_run(args.bin, args.model, p, TOKENS) for p in PROMPTS]
    check(len(set(expected)) > 8, "the prompts should give different continuations")
    served = args.model.rstrip("/") + ".gguf" if args.gguf else args.model

    with Server(args.bin, served, "--parallel", "16", "--prefill-chunk", "16",
                launcher=shlex.split(args.launcher)) as server:
        # One at a time.
        for i, prompt in enumerate(PROMPTS):
            text, finish = complete(server, prompt, stream=i % 2 == 1)
            check(text == expected[i],
                  f"alone, prompt {i}: server {text!r} != attn-run {expected[i]!r}")
            check(finish in ("length", "stop"), f"finish_reason {finish}")

        time.sleep(args.idle)
        # All 16 at once, twice (the second round reuses the slots).
        for round_ in range(2):
            results = [None] * len(PROMPTS)
            start = threading.Barrier(len(PROMPTS))

            def client(i):
                start.wait()
                results[i] = complete(server, PROMPTS[i], stream=(i + round_) % 2 == 0)

            threads = [threading.Thread(target=client, args=(i,)) for i in range(len(PROMPTS))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            for i, result in enumerate(results):
                check(result is not None, f"round {round_}: client {i} did not finish")
                check(result[0] == expected[i],
                      f"round {round_}, concurrent, prompt {i}: server {result[0]!r} != "
                      f"attn-run {expected[i]!r}")
        metrics = server.metrics()
        # The concurrent rounds decoded many sessions per batched call.
        check(metrics["decode_tokens_total"] > 2 * metrics["decode_steps_total"],
              f"no batching happened: {metrics}")
        code = server.stop()
        check(code == 0, f"attn-serve exited with {code} after SIGTERM:\n{server.log()}")
    print(f"ok: {len(PROMPTS)} prompts x {TOKENS} tokens equal attn-run alone and "
          f"16 at once ({metrics['decode_tokens_total'] / metrics['decode_steps_total']:.1f} "
          "sessions per decode step)")


if __name__ == "__main__":
    main()
