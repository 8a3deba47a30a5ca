# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: how sanitized build
# directories are configured, and the sanitizer runtime options every run
# uses. See docs/reliability.md.

attn_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# attn_configure_sanitized DIR SANITIZERS [cmake args...]
# Configures DIR (once, or again when SANITIZERS changed): Release with -O1
# (sanitized code at -O3 compiles slowly for little gain), clang-22, and the
# sanitizers on our own targets (cmake/Sanitizers.cmake).
attn_configure_sanitized() {
  local dir=$1 sanitizers=$2
  shift 2
  local stamp="$dir/.attn-sanitize-config"
  local want="$sanitizers $*"
  if [[ -f "$dir/build.ninja" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  mkdir -p "$dir"
  cmake -G Ninja -S "$attn_root" -B "$dir" \
    -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG" \
    "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DATTN_SANITIZE="$sanitizers" "$@" >"$dir/attn-configure.log" 2>&1 || {
    cat "$dir/attn-configure.log" >&2
    return 1
  }
  echo "$want" >"$stamp"
}

# Reports are fatal and symbolized; LeakSanitizer is on (ASan's default on
# Linux, stated anyway) and needs no suppressions. allocator_may_return_null:
# a failed allocation returns NULL as it does without ASan, so the runtime's
# "cannot allocate" paths run instead of an ASan abort.
export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-22/bin/llvm-symbolizer}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:allocator_may_return_null=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-report_objects=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# ignore_noninstrumented_modules: the compiled model and the OpenMP runtime it
# may use (libomp) are not instrumented, so TSan sees only half of their
# synchronization (e.g. a mutex initialized by a libomp worker and locked by
# the caller after libomp's own futex handshake) and reports races inside
# them that are not there. Every access our own code makes is still checked.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1}
