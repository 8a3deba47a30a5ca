// Encoding speed of the JavaScript references, for comparison with the C++ tokenizer.
//
//   node test/data/encode-speed.mjs [--testdata DEST] [--tokenizer NAME] <text-file>
//
// DEST is what scripts/test-data.sh filled (default: $ATTN_TESTDATA, else
// ${ATTN_BUILD_DIR:-<repo>/build}/testdata); it supplies DEST/npm and DEST/tokenizers/NAME
// (default gpt2). @lenml/tokenizers runs any of them; gpt-3-encoder, GPT-2's own encoder, runs
// for gpt2 only. The file is split into paragraphs by the rule of reference-ids.mjs (runs of two
// or more "\n"; empty pieces dropped) and each paragraph is one encode call, as on the C++ side.
// One warm-up pass, then 5 timed passes; MB/s = the file's UTF-8 size in 10^6 bytes / seconds
// of one pass. Both libraries keep a BPE cache across calls, so the timed passes run with warm
// caches. Prints {"gpt-3-encoder": {"mb_per_s": [5 runs], "median": x}, "@lenml/tokenizers":
// {...}} (without "gpt-3-encoder" for another tokenizer).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");
const args = process.argv.slice(2);
let dest = process.env.ATTN_TESTDATA || path.join(process.env.ATTN_BUILD_DIR || path.join(repo, "build"), "testdata");
let name = "gpt2";
const positional = [];
for (let k = 0; k < args.length; ++k) {
  if (args[k] === "--testdata") dest = args[++k];
  else if (args[k] === "--tokenizer") name = args[++k];
  else positional.push(args[k]);
}
if (positional.length !== 1 || !name) {
  console.error("usage: encode-speed.mjs [--testdata DEST] [--tokenizer NAME] <text-file>");
  process.exit(2);
}
const textFile = positional[0];
const nodeModules = path.join(dest, "npm", "node_modules");
const tokDir = path.join(dest, "tokenizers", name);
const withGpt3 = name === "gpt2";
const needed = [path.join(nodeModules, "@lenml/tokenizers/dist/main.mjs"), path.join(tokDir, "tokenizer.json"), textFile];
if (withGpt3) needed.push(path.join(nodeModules, "gpt-3-encoder/Encoder.js"));
for (const f of needed) {
  if (!fs.existsSync(f)) {
    console.error(`encode-speed: missing ${f} (run scripts/test-data.sh, or pass --testdata)`);
    process.exit(1);
  }
}

const { TokenizerLoader } = await import(pathToFileURL(path.join(nodeModules, "@lenml/tokenizers/dist/main.mjs")).href);
const lenml = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(path.join(tokDir, "tokenizer.json"), "utf8")),
  tokenizerConfig: JSON.parse(fs.readFileSync(path.join(tokDir, "tokenizer_config.json"), "utf8")),
});
const gpt3 = withGpt3 ? createRequire(path.join(nodeModules, "noop.js"))(path.join(nodeModules, "gpt-3-encoder")) : null;

const bytes = fs.readFileSync(textFile);
const text = bytes.toString("utf8");
const paragraphs = text.split(/\n{2,}/).filter((p) => p.length > 0);
const mb = bytes.length / 1e6;

function bench(encode) {
  const pass = () => {
    const t0 = process.hrtime.bigint();
    let n = 0;
    for (const p of paragraphs) n += encode(p).length;
    return [Number(process.hrtime.bigint() - t0) / 1e9, n];
  };
  pass(); // warm-up
  const rates = [];
  for (let r = 0; r < 5; ++r) rates.push(+(mb / pass()[0]).toFixed(3));
  const sorted = [...rates].sort((a, b) => a - b);
  return { mb_per_s: rates, median: sorted[2] };
}

const result = {};
if (gpt3) result["gpt-3-encoder"] = bench((p) => gpt3.encode(p));
result["@lenml/tokenizers"] = bench((p) => lenml.encode(p));
console.log(JSON.stringify(result));
