#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time and fails on any finding
# (docs/reliability.md).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# SECONDS per target (default 20); TARGETs among safetensors gguf manifest
# model-config npy session attn-opt ... (the list `all` below; default all). Targets run
# $ATTN_FUZZ_JOBS at a time (default: the number of cores). Each fuzzes a
# copy of its committed seed corpus (test/fuzz/corpus/<target>) in
# $ATTN_FUZZ_WORK (default <build>/fuzz-work); crashes, leaks, timeouts and
# out-of-memory inputs are written to $ATTN_FUZZ_WORK/findings.
# $ATTN_FUZZ_SEED and $ATTN_FUZZ_RUNS (unset: a random seed, no count limit)
# make a run nearly repeatable: a fixed seed and a stop after that many
# inputs (or at SECONDS, whichever comes first); scripts/test.sh sets both. The build
# directory is $ATTN_SANITIZE_BUILD_DIR (default build-sanitize, shared with
# scripts/sanitize.sh), configured with ASan+UBSan and -DATTN_FUZZ=ON.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=sanitize-env.sh
source "$root/scripts/sanitize-env.sh"
"$root/scripts/setup.sh" # clang-22, libclang-rt-22-dev (the sanitizer runtimes), ...
build=${ATTN_SANITIZE_BUILD_DIR:-$root/build-sanitize}
seconds=${1:-20}
shift || true
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [[ "$seconds" -lt 1 ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
  exit 2
fi
all=(safetensors gguf manifest model-config npy session attn-opt tokenizer-json
  tokenizer-text chat-template serve-request)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")
jobs=${ATTN_FUZZ_JOBS:-$(nproc)}
work=${ATTN_FUZZ_WORK:-$build/fuzz-work}

# Per target: the longest input worth trying, and its dictionary.
max_len() {
  case $1 in
  safetensors | gguf) echo 4096 ;;
  tokenizer-json) echo 8192 ;;
  attn-opt | chat-template) echo 2048 ;;
  session) echo 512 ;;
  *) echo 1024 ;;
  esac
}
dict() {
  case $1 in
  safetensors | manifest | model-config | serve-request) echo "$root/test/fuzz/dict/json.dict" ;;
  npy) echo "$root/test/fuzz/dict/npy.dict" ;;
  tokenizer-json) echo "$root/test/fuzz/dict/tokenizer.dict" ;;
  chat-template) echo "$root/test/fuzz/dict/jinja.dict" ;;
  attn-opt) echo "$root/test/fuzz/dict/mlir.dict" ;;
  *) echo "" ;;
  esac
}

for t in "${targets[@]}"; do
  if [[ ! -d "$root/test/fuzz/corpus/$t" ]]; then
    echo "fuzz.sh: unknown target '$t' (one of: ${all[*]})" >&2
    exit 2
  fi
done

attn_configure_sanitized "$build" address,undefined -DATTN_FUZZ=ON
cmake --build "$build" --target $(printf 'attn-fuzz-%s ' "${targets[@]}")

rm -rf "$work"
mkdir -p "$work/findings"

# One target: fuzz a copy of its corpus for $seconds, log to $work/<t>.log.
fuzz_one() {
  local t=$1
  local corpus="$work/corpus/$t" log="$work/$t.log"
  mkdir -p "$corpus"
  cp "$root/test/fuzz/corpus/$t"/* "$corpus/"
  local args=(-max_total_time="$seconds" -max_len="$(max_len "$t")"
    -timeout=20 -rss_limit_mb=2048 -print_final_stats=1
    -artifact_prefix="$work/findings/$t-")
  [[ -n "${ATTN_FUZZ_SEED:-}" ]] && args+=(-seed="$ATTN_FUZZ_SEED")
  [[ -n "${ATTN_FUZZ_RUNS:-}" ]] && args+=(-runs="$ATTN_FUZZ_RUNS")
  local d
  d=$(dict "$t")
  [[ -n "$d" ]] && args+=(-dict="$d")
  # A run ends by itself after $seconds; the timeout only guards a hang of
  # the harness itself.
  timeout --kill-after=30 $((seconds + 120)) \
    "$build/bin/attn-fuzz-$t" "${args[@]}" "$corpus" >"$log" 2>&1
}

echo "== fuzzing ${#targets[@]} targets for ${seconds} s each, $jobs at a time"
started=$SECONDS
declare -A status=() running=()
pending=("${targets[@]}")
while [[ ${#pending[@]} -gt 0 || ${#running[@]} -gt 0 ]]; do
  while [[ ${#pending[@]} -gt 0 && ${#running[@]} -lt $jobs ]]; do
    t=${pending[0]}
    pending=("${pending[@]:1}")
    fuzz_one "$t" &
    running[$!]=$t
  done
  # Whichever finishes first (bash 5.1: -p names it).
  rc=0
  wait -n -p done_pid || rc=$?
  status[${running[$done_pid]}]=$rc
  unset "running[$done_pid]"
done

# Summary: executions (libFuzzer's final stats), corpus growth, result.
failed=0
printf '%-14s %10s %8s %9s  %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do
  log="$work/$t.log"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  size=$(find "$work/corpus/$t" -type f | wc -l)
  found=$(find "$work/findings" -name "$t-*" | wc -l)
  result=ok
  if [[ ${status[$t]} -ne 0 || $found -gt 0 ]]; then
    result="FAILED (exit ${status[$t]}, $found finding(s); see $log)"
    failed=1
  fi
  printf '%-14s %10s %8s %9s  %s\n' "$t" "${runs:-?}" "${rate:-?}" "$size" "$result"
done
if [[ $failed -ne 0 ]]; then
  echo "== fuzz findings in $work/findings:" >&2
  ls -l "$work/findings" >&2
  for t in "${targets[@]}"; do
    if [[ ${status[$t]} -ne 0 ]]; then
      echo "---- $t (last lines of $work/$t.log)" >&2
      grep -v '^#' "$work/$t.log" | tail -40 >&2
    fi
  done
  exit 1
fi
echo "== fuzzing: no findings ($((SECONDS - started)) s)"
