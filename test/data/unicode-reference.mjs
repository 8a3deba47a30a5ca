// Unicode normalization and lowercase of every code point by Node's ICU, the reference for the
// C++ tokenizer's NFC, NFD, NFKC, NFKD and Lowercase normalizers (utf8proc's tables).
//
//   node test/data/unicode-reference.mjs <out.tsv>
//
// One tab-separated line per mapping that changes its input, code points in hex:
//   <form>\t<input>\t<output>      form: NFC, NFD, NFKC, NFKD or Lowercase
// for each code point c (surrogates excepted): NFC(c), NFD(c), NFKC(c), NFKD(c), and
// c.toLowerCase() (one character alone: no final-sigma context, which is Hugging Face's
// per-character Lowercase); and the composition of each decomposition: NFC(NFD(c)) and
// NFKC(NFKD(c)). A mapping not listed leaves its input as it is. Then the code points ICU
// does not know (general category Cn) as ranges:
//   unassigned\t<first>\t<last>
// The first line, "#" and the versions, says which tables these are.
import fs from "node:fs";

const [outFile] = process.argv.slice(2);
if (!outFile) {
  console.error("usage: unicode-reference.mjs <out.tsv>");
  process.exit(2);
}
const hex = (s) => [...s].map((c) => c.codePointAt(0).toString(16).toUpperCase()).join(" ");
const lines = [`# node ${process.version}, ICU ${process.versions.icu}, Unicode ${process.versions.unicode}`];
const unassigned = [];
let mappings = 0;
for (let cp = 0; cp <= 0x10ffff; ++cp) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const c = String.fromCodePoint(cp);
  if (/\p{Cn}/u.test(c)) {
    const last = unassigned.at(-1);
    if (last && last[1] === cp - 1) last[1] = cp;
    else unassigned.push([cp, cp]);
    continue;
  }
  const add = (form, input, output) => {
    if (output !== input) {
      lines.push(`${form}\t${hex(input)}\t${hex(output)}`);
      ++mappings;
    }
  };
  for (const form of ["NFC", "NFD", "NFKC", "NFKD"]) add(form, c, c.normalize(form));
  add("NFC", c.normalize("NFD"), c.normalize("NFD").normalize("NFC"));
  add("NFKC", c.normalize("NFKD"), c.normalize("NFKD").normalize("NFKC"));
  add("Lowercase", c, c.toLowerCase());
}
for (const [first, last] of unassigned) lines.push(`unassigned\t${first.toString(16).toUpperCase()}\t${last.toString(16).toUpperCase()}`);
fs.writeFileSync(outFile + ".tmp", lines.join("\n") + "\n");
fs.renameSync(outFile + ".tmp", outFile);
console.error(`unicode-reference: ${mappings} mappings, ${unassigned.length} unassigned ranges (ICU ${process.versions.icu}, Unicode ${process.versions.unicode}) into ${outFile}`);
