// Reference token ids for the C++ tokenizer tests.
//
//   node test/data/reference-ids.mjs [--npm DIR] [--second gpt-3-encoder|llama-tokenizer-js] \
//        [--unpatched] <tokenizer-dir> <text-file> <out.jsonl> [<text-file> <out.jsonl> ...]
//
// Several texts share one load of the tokenizer (seconds for the large vocabularies); each gets
// its own .jsonl and summary line.
//
// <tokenizer-dir> holds a Hugging Face tokenizer.json + tokenizer_config.json. The ids come from
// @lenml/tokenizers (transformers.js's tokenizers): TokenizerLoader.fromPreTrained, then
// encode(text) with its default add_special_tokens = true. --npm is the folder where `npm ci`
// installed test/data/package-lock.json (default: $ATTN_TESTDATA_NPM, else
// <tokenizer-dir>/../../npm, i.e. DEST/npm for DEST/tokenizers/<name>).
//
// Paragraph rule: the text (UTF-8) is split on every run of two or more "\n" characters (the
// regex /\n{2,}/); the runs themselves are dropped, pieces of length 0 are dropped, and every
// other piece is kept exactly as it is (leading/trailing spaces, single "\n" inside it, and the
// file's final "\n", which stays on the last paragraph). "i" counts the kept paragraphs from 0.
//
// Output, one JSON object per line:
//   {"i": <paragraph index>, "text": <paragraph>, "ids": [...], "decoded": <decode(ids)>}
// then one line with "i": -1 for the whole file encoded in one call. "decoded" is
// decode(ids, {skip_special_tokens: false, clean_up_tokenization_spaces: false}) — the
// tokenizer.json decoder's output, with special tokens kept, and no transformers-level clean-up.
// Optional fields, present only when they differ from "ids" (or "decoded"):
//   "decoded_default" decode(ids) as transformers' decode does by default with this
//                    tokenizer_config.json: special tokens kept, clean_up_tokenization_spaces
//                    as the file says (false when absent; transformers.js would take true);
//   "ids2"           (paragraph lines only: gpt-3-encoder is quadratic on a whole book)
//                    the --second package's own encoder on the same text (gpt-3-encoder's
//                    encode(text); llama-tokenizer-js's encode(text), which adds BOS and a
//                    preceding space like the HF LLaMA tokenizer.json does);
//   "ids_unpatched"  with --unpatched, for tokenizers that need an HF-compat shim (below):
//                    plain @lenml's ids (costs a second encode of everything; off by default).
//   "ids2_error"     the second encoder threw (the message).
//
// HF-compat shims. @lenml/tokenizers 3.7.2 does not implement everything tokenizer.json can say;
// where the test tokenizers use such a feature, this script replaces that one step with a
// transcription of Hugging Face tokenizers' Rust code (tokenizers/src/tokenizer/normalizer.rs
// NormalizedString::split, pattern.rs, added_vocabulary.rs AddedVocabulary::find_matches /
// extract_and_normalize), and says so on stderr:
//   - Split pre-tokenizer: @lenml implements only Isolated and Removed, and with invert: true it
//     keeps only the matches. The shim implements all five behaviours and invert. It is used for
//     a Split with invert: true or behaviour MergedWithPrevious, MergedWithNext or Contiguous.
//   - Added tokens: @lenml ignores single_word and matches normalized and non-normalized added
//     tokens in one pass. The shim is used when some added token has single_word: true or when
//     normalized and non-normalized added tokens are mixed.
// Tokenizers without those features (gpt2, llama2, mistral, gpt2-llama3, gpt2-qwen2,
// gpt2-split-removed) are pure @lenml.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

function usage(msg) {
  if (msg) console.error(`reference-ids: ${msg}`);
  console.error(
    "usage: reference-ids.mjs [--npm DIR] [--second gpt-3-encoder|llama-tokenizer-js] [--unpatched] <tokenizer-dir> <text-file> <out.jsonl> [<text-file> <out.jsonl> ...]"
  );
  process.exit(2);
}

const args = process.argv.slice(2);
let npmDir = process.env.ATTN_TESTDATA_NPM || null;
let second = null;
let withUnpatched = false;
const positional = [];
for (let k = 0; k < args.length; ++k) {
  if (args[k] === "--npm") npmDir = args[++k];
  else if (args[k] === "--second") second = args[++k];
  else if (args[k] === "--unpatched") withUnpatched = true;
  else if (args[k].startsWith("--")) usage(`unknown option ${args[k]}`);
  else positional.push(args[k]);
}
if (positional.length < 3 || positional.length % 2 === 0) usage();
const [tokDir, ...textsAndOuts] = positional;
if (second !== null && second !== "gpt-3-encoder" && second !== "llama-tokenizer-js") {
  usage(`unknown --second ${second}`);
}
npmDir ??= path.join(tokDir, "..", "..", "npm");
const nodeModules = path.join(npmDir, "node_modules");

function mustExist(file, what) {
  if (!fs.existsSync(file)) {
    console.error(`reference-ids: missing ${what}: ${file}`);
    process.exit(1);
  }
}
const lenmlEntry = path.join(nodeModules, "@lenml/tokenizers/dist/main.mjs");
mustExist(lenmlEntry, "@lenml/tokenizers (run scripts/test-data.sh, or pass --npm)");
mustExist(path.join(tokDir, "tokenizer.json"), "tokenizer.json");
mustExist(path.join(tokDir, "tokenizer_config.json"), "tokenizer_config.json");
for (let k = 0; k < textsAndOuts.length; k += 2) mustExist(textsAndOuts[k], "text file");

const { TokenizerLoader } = await import(pathToFileURL(lenmlEntry).href);

const tokenizerJSON = JSON.parse(fs.readFileSync(path.join(tokDir, "tokenizer.json"), "utf8"));
const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(tokDir, "tokenizer_config.json"), "utf8"));
// fromPreTrained keeps references into the objects it is given; give each instance its own copy.
const load = () =>
  TokenizerLoader.fromPreTrained({
    tokenizerJSON: structuredClone(tokenizerJSON),
    tokenizerConfig: structuredClone(tokenizerConfig),
  });

// ---- HF-compat shim 1: the Split pre-tokenizer --------------------------------------------
const LENML_SPLIT_OK = new Set(["Isolated", "Removed"]);

// NormalizedString::split(pattern, behavior) over find_matches (+ Invert), for a JS string.
function hfSplit(text, regex, behavior, invert) {
  if (text.length === 0) return [];
  const segs = []; // [start, end, isMatch]
  let prev = 0;
  regex.lastIndex = 0;
  for (const m of text.matchAll(regex)) {
    const s = m.index;
    const e = s + m[0].length;
    if (prev !== s) segs.push([prev, s, false]);
    segs.push([s, e, true]);
    prev = e;
  }
  if (prev !== text.length) segs.push([prev, text.length, false]);
  if (invert) for (const seg of segs) seg[2] = !seg[2];

  let out = [];
  switch (behavior) {
    case "Isolated":
      out = segs.map(([s, e]) => [s, e]);
      break;
    case "Removed":
      out = segs.filter((seg) => !seg[2]).map(([s, e]) => [s, e]);
      break;
    case "Contiguous": {
      let previousMatch = false;
      for (const [s, e, isMatch] of segs) {
        if (isMatch === previousMatch && out.length > 0) out[out.length - 1][1] = e;
        else out.push([s, e]);
        previousMatch = isMatch;
      }
      break;
    }
    case "MergedWithPrevious": {
      let previousMatch = false;
      for (const [s, e, isMatch] of segs) {
        if (isMatch && !previousMatch && out.length > 0) out[out.length - 1][1] = e;
        else out.push([s, e]);
        previousMatch = isMatch;
      }
      break;
    }
    case "MergedWithNext": {
      let previousMatch = false;
      for (let k = segs.length - 1; k >= 0; --k) {
        const [s, e, isMatch] = segs[k];
        if (isMatch && !previousMatch && out.length > 0) out[out.length - 1][0] = s;
        else out.push([s, e]);
        previousMatch = isMatch;
      }
      out.reverse();
      break;
    }
    default:
      throw new Error(`reference-ids: unknown Split behavior ${behavior}`);
  }
  // PreTokenizedString::split drops empty pieces.
  return out.filter(([s, e]) => e > s).map(([s, e]) => text.slice(s, e));
}

function* preTokenizerNodes(node) {
  if (!node) return;
  yield node;
  if (Array.isArray(node.tokenizers)) for (const t of node.tokenizers) yield* preTokenizerNodes(t);
}

function installSplitShim(tok) {
  let n = 0;
  for (const node of preTokenizerNodes(tok.pre_tokenizer)) {
    const c = node.config;
    if (!c || c.type !== "Split") continue;
    if (!c.invert && LENML_SPLIT_OK.has(c.behavior)) continue;
    if (!(node.pattern instanceof RegExp) || !node.pattern.global) {
      throw new Error("reference-ids: Split pattern did not compile to a global RegExp");
    }
    const regex = node.pattern; // @lenml's own translation of the pattern to a JS RegExp
    node.pre_tokenize_text = (text) => hfSplit(text, regex, c.behavior, c.invert);
    ++n;
  }
  return n;
}

// ---- HF-compat shim 2: added-token extraction -------------------------------------------------
const WORD_CHAR = /[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]/u; // Rust regex \w
const TRAILING_SPACE = /\p{White_Space}*$/u; // Rust regex \s*$
const LEADING_SPACE = /^\p{White_Space}*/u; // Rust regex ^\s*

function needsAddedTokenShim(added) {
  const normalized = added.filter((t) => t.normalized).length;
  return added.some((t) => t.single_word) || (normalized > 0 && normalized < added.length);
}

// AddedVocabulary::find_matches with a LeftmostLongest matcher; returns [{s, e, token|null}].
function findAddedMatches(sentence, tokens) {
  if (tokens.length === 0 || sentence.length === 0) return [{ s: 0, e: sentence.length, token: null }];
  const byFirst = new Map();
  for (const t of tokens) {
    const c = t.content[0];
    if (!byFirst.has(c)) byFirst.set(c, []);
    byFirst.get(c).push(t);
  }
  for (const list of byFirst.values()) list.sort((a, b) => b.content.length - a.content.length);

  const splits = [];
  let startOffset = 0;
  let pos = 0;
  while (pos < sentence.length) {
    // leftmost match, longest at that position
    let mat = null;
    for (let i = pos; i < sentence.length && mat === null; ++i) {
      const cands = byFirst.get(sentence[i]);
      if (!cands) continue;
      for (const t of cands) {
        if (sentence.startsWith(t.content, i)) {
          mat = { start: i, end: i + t.content.length, token: t };
          break;
        }
      }
    }
    if (mat === null) break;
    pos = mat.end; // non-overlapping iteration continues after the match, kept or not
    let start = mat.start;
    let stop = mat.end;
    const t = mat.token;
    if (t.single_word) {
      const startSpace = start === 0 || !WORD_CHAR.test(lastChar(sentence, start));
      const stopSpace = stop === sentence.length || !WORD_CHAR.test(firstChar(sentence, stop));
      if (!startSpace || !stopSpace) continue;
    }
    if (t.lstrip) {
      const before = sentence.slice(0, start);
      const newStart = before.length - before.match(TRAILING_SPACE)[0].length;
      start = Math.max(newStart, startOffset);
    }
    if (t.rstrip) {
      stop += sentence.slice(stop).match(LEADING_SPACE)[0].length;
    }
    if (startOffset < start) splits.push({ s: startOffset, e: start, token: null });
    splits.push({ s: start, e: stop, token: t });
    startOffset = stop;
  }
  if (startOffset !== sentence.length) splits.push({ s: startOffset, e: sentence.length, token: null });
  return splits;
}
function lastChar(s, end) {
  const cp = s.codePointAt(end - 1);
  return end >= 2 && cp >= 0xdc00 && cp <= 0xdfff ? String.fromCodePoint(s.codePointAt(end - 2)) : String.fromCodePoint(cp);
}
function firstChar(s, start) {
  return String.fromCodePoint(s.codePointAt(start));
}

function installAddedTokenShim(tok, added) {
  if (tok.remove_space === true || tok.do_lowercase_and_remove_accent) {
    throw new Error("reference-ids: the added-token shim does not handle remove_space / do_lowercase_and_remove_accent");
  }
  // The shim stands in for PreTrainedTokenizer._encode_text; a subclass that overrides it would
  // lose its own logic (LlamaTokenizer's override only matters when legacy is false).
  let base = Object.getPrototypeOf(tok);
  while (base && base.constructor.name !== "PreTrainedTokenizer") base = Object.getPrototypeOf(base);
  const own = Object.getPrototypeOf(tok)._encode_text;
  if (!base || (own !== base._encode_text && !(tok.constructor.name === "LlamaTokenizer" && tok.legacy))) {
    throw new Error(`reference-ids: the added-token shim cannot stand in for ${tok.constructor.name}._encode_text`);
  }
  const norm = (x) => (tok.normalizer !== null ? tok.normalizer(x) : x);
  const raw = added.filter((t) => !t.normalized);
  // HF matches normalized added tokens by their normalized content.
  const normalized = added.filter((t) => t.normalized).map((t) => ({ ...t, content: norm(t.content) }));
  tok._encode_text = function (text) {
    if (text === null) return null;
    const out = [];
    let section = 0;
    for (const p1 of findAddedMatches(text, raw)) {
      const piece1 = text.slice(p1.s, p1.e);
      if (p1.token) {
        out.push(p1.token.content);
        continue;
      }
      if (piece1.length === 0) continue;
      const normed = norm(piece1);
      for (const p2 of findAddedMatches(normed, normalized)) {
        const piece2 = normed.slice(p2.s, p2.e);
        if (p2.token) {
          out.push(added.find((t) => t.id === p2.token.id).content);
          continue;
        }
        if (piece2.length === 0) continue;
        const pre = this.pre_tokenizer !== null ? this.pre_tokenizer(piece2, { section_index: section }) : [piece2];
        for (const t of this.model(pre)) out.push(t);
        ++section;
      }
    }
    return out;
  };
}

// ---- the tokenizers --------------------------------------------------------------------------
const name = path.basename(path.resolve(tokDir));
const tok = load();
const shims = [];
const nSplit = installSplitShim(tok);
if (nSplit > 0) shims.push(`Split x${nSplit}`);
const added = tokenizerJSON.added_tokens ?? [];
if (needsAddedTokenShim(added)) {
  installAddedTokenShim(tok, added);
  shims.push("added tokens");
}
const unpatched = shims.length > 0 && withUnpatched ? load() : null;

let encode2 = null;
if (second === "gpt-3-encoder") {
  const require = createRequire(path.join(nodeModules, "noop.js"));
  const gpt3 = require(path.join(nodeModules, "gpt-3-encoder"));
  encode2 = (text) => gpt3.encode(text);
} else if (second === "llama-tokenizer-js") {
  const entry = path.join(nodeModules, "llama-tokenizer-js/llama-tokenizer.js");
  mustExist(entry, "llama-tokenizer-js");
  const llama = (await import(pathToFileURL(entry).href)).default;
  encode2 = (text) => llama.encode(text);
}

// ---- the texts ---------------------------------------------------------------------------------
const sameIds = (a, b) => a.length === b.length && a.every((v, k) => v === b[k]);
const decode = (t, ids, cleanUp = false) =>
  ids.length === 0 ? "" : t.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: cleanUp });
// transformers' decode(ids) cleans up spaces when tokenizer_config.json says so (false when the
// key is absent, as in transformers; transformers.js would take true).
const cleanUpByDefault = tokenizerConfig.clean_up_tokenization_spaces === true;

function referenceFile(textFile, outFile) {
  let text;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(fs.readFileSync(textFile));
  } catch (e) {
    console.error(`reference-ids: ${textFile} is not valid UTF-8`);
    process.exit(1);
  }
  const paragraphs = text.split(/\n{2,}/).filter((p) => p.length > 0);

  const t0 = performance.now();
  const lines = [];
  let nTokens = 0;
  let nDiff2 = 0;
  let nErr2 = 0;
  let nDiffUnpatched = 0;
  const examples = [];
  function record(i, piece) {
    const ids = tok.encode(piece);
    const rec = { i, text: piece, ids, decoded: decode(tok, ids) };
    if (cleanUpByDefault) {
      const cleaned = decode(tok, ids, true);
      if (cleaned !== rec.decoded) rec.decoded_default = cleaned;
    }
    if (i >= 0) nTokens += ids.length;
    if (encode2 && i >= 0) {
      try {
        const ids2 = encode2(piece);
        if (!sameIds(ids, ids2)) {
          rec.ids2 = ids2;
          ++nDiff2;
          if (examples.length < 3) examples.push(i);
        }
      } catch (e) {
        rec.ids2_error = String(e && e.message ? e.message : e);
        ++nErr2;
      }
    }
    if (unpatched) {
      const ids0 = unpatched.encode(piece);
      if (!sameIds(ids, ids0)) {
        rec.ids_unpatched = ids0;
        if (i >= 0) ++nDiffUnpatched;
      }
    }
    lines.push(JSON.stringify(rec));
  }
  paragraphs.forEach((p, i) => record(i, p));
  record(-1, text);
  const seconds = (performance.now() - t0) / 1000;

  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  fs.writeFileSync(outFile + ".tmp", lines.join("\n") + "\n");
  fs.renameSync(outFile + ".tmp", outFile);

  let summary = `reference-ids: ${name} ${path.basename(textFile)}: ${paragraphs.length} paragraphs, ${nTokens} tokens, ${seconds.toFixed(1)} s`;
  if (shims.length) {
    summary += `; HF-compat shim (${shims.join(", ")})`;
    if (unpatched) summary += `: plain @lenml differs on ${nDiffUnpatched} paragraphs`;
  }
  if (encode2) {
    summary += `; ${second} disagrees on ${nDiff2} paragraphs`;
    if (nErr2) summary += `, throws on ${nErr2}`;
    if (examples.length) summary += ` (e.g. i=${examples.join(", ")})`;
  }
  console.error(summary);
}
for (let k = 0; k < textsAndOuts.length; k += 2) referenceFile(textsAndOuts[k], textsAndOuts[k + 1]);
