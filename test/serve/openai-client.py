"""The official openai npm client against attn-serve (openai-client.mjs):
started here with --api-key and the test chat template, the completions
compared with attn-run's greedy continuation. The client comes from
scripts/test-data.sh (DEST/npm, `npm ci` of test/data/package-lock.json);
without it the test is skipped (77), except under CI=true.
"""

import os
import subprocess
import sys

from serve_harness import SKIP, Server, attn_run, check, fail, parse_args

KEY = "sk-attn-openai-test"
PROMPT = "It is a truth universally acknowledged, that a single man"


def main():
    def extra(parser):
        parser.add_argument("--npm", required=True, help="DEST/npm of scripts/test-data.sh")
        parser.add_argument("--chat-template", required=True)
    args = parse_args(__doc__, extra)
    if not os.path.isfile(os.path.join(args.npm, "node_modules", "openai", "package.json")):
        message = f"{args.npm}/node_modules/openai is missing (run scripts/test-data.sh)"
        if os.environ.get("CI") == "true":
            fail(message + ": CI must run this test")
        print("skipped: " + message)
        sys.exit(SKIP)
    expected = attn_run(args.bin, args.model, PROMPT, 16)
    here = os.path.dirname(os.path.abspath(__file__))
    with Server(args.bin, args.model, "--api-key", KEY, "--chat-template",
                args.chat_template, "--model-name", "austen-tiny", "--parallel", "2") as server:
        node = subprocess.run(
            ["node", os.path.join(here, "openai-client.mjs"), args.npm,
             f"http://127.0.0.1:{server.port}", KEY, "austen-tiny", PROMPT, expected],
            capture_output=True, text=True, timeout=240)
        sys.stdout.write(node.stdout)
        if node.returncode != 0:
            fail(f"openai-client.mjs exited with {node.returncode}:\n{node.stderr}\n"
                 f"server log:\n{server.log()}")
        code = server.stop()
        check(code == 0, f"attn-serve exited with {code}:\n{server.log()}")


if __name__ == "__main__":
    main()
