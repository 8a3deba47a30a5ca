#!/usr/bin/env bash
# Installs the build into a temporary prefix and, from outside the source
# tree, builds docs/runtime.md's C example against the installed tree, once
# through find_package(Attn) and once through pkg-config; runs both on the
# trained austen-llama of ../shared, compiled on first use by the installed
# attn-compile. Also checks what the install holds: the SONAME, RPATHs that
# do not point into the build tree, every tool's --version, and that
# find_package refuses an incompatible version.
# usage: consumer.sh BUILD_DIR SOURCE_DIR SHARED_DIR VERSION
set -euo pipefail
build=$1 src=$2 shared=$3 version=$4
model=$shared/models/austen-llama
if [[ ! -f $model/config.json ]]; then
  if [[ ${CI:-} == true ]]; then
    echo "error: $model is missing: CI must run this test" >&2
    exit 1
  fi
  echo "skipped: $model is missing"
  exit 77
fi
fail() { echo "error: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
libdir=
for dir in lib lib64 lib/x86_64-linux-gnu; do
  if [[ -e $prefix/$dir/libattnrt.so.${version%%.*} ]]; then libdir=$dir; break; fi
done
[[ -n $libdir ]] || fail "no libattnrt.so.${version%%.*} under $prefix/lib"
for file in bin/attn-compile bin/attn-run bin/attn-opt bin/attn-tokenize \
    bin/attn-perplexity bin/attn-inspect bin/attn-serve bin/attn-make-model bin/attn-bench \
    "$libdir/libattnrt.so" "$libdir/libattnrt.so.$version" \
    include/attnrt/attnrt.h include/attnrt/model_abi.h include/attnrt/version.h \
    "$libdir/cmake/Attn/AttnConfig.cmake" "$libdir/cmake/Attn/AttnConfigVersion.cmake" \
    "$libdir/cmake/Attn/AttnTargets.cmake" "$libdir/pkgconfig/attnrt.pc" \
    share/doc/attn/runtime.md share/doc/attn/install.md \
    share/doc/attn/generated/Dialects/AttnOps.md \
    "$libdir/python3/dist-packages/attn/__init__.py"; do
  [[ -e $prefix/$file ]] || fail "the install lacks $file"
done
readelf -d "$prefix/$libdir/libattnrt.so.$version" | grep -q "SONAME.*\[libattnrt.so.${version%%.*}\]" ||
  fail "libattnrt's SONAME is not libattnrt.so.${version%%.*}"
# libattnrt needs libc alone (the C++ runtime and PCRE2 are linked in).
needed=$(readelf -d "$prefix/$libdir/libattnrt.so.$version" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
for lib in $needed; do
  [[ $lib =~ ^(libc|libm|libdl|ld-linux-x86-64)\.so ]] || fail "libattnrt needs $lib (all it needs: $needed)"
done
for tool in attn-compile attn-opt attn-run attn-tokenize attn-perplexity attn-inspect attn-serve \
    attn-make-model attn-bench; do
  if readelf -d "$prefix/bin/$tool" | grep -E "R(UN)?PATH" | grep -qF "$build"; then
    fail "$tool's RPATH points into the build tree"
  fi
  out=$("$prefix/bin/$tool" --version)
  grep -qx "$tool (Attn) $version" <<<"$out" || fail "$tool --version: $out"
  grep -q "^built with LLVM/MLIR 22\." <<<"$out" || fail "$tool --version: $out"
done
grep -q '^#define ATTNRT_VERSION "'"$version"'"' "$prefix/include/attnrt/version.h" ||
  fail "version.h does not say $version"

# The example exactly as docs/runtime.md shows it: its first C block.
awk '/^```c$/ && !seen {on = 1; seen = 1; next} on && /^```$/ {on = 0} on' \
  "$src/docs/runtime.md" > "$work/example.c"
grep -q "attnrt_model_load_dir" "$work/example.c" || fail "no C example in docs/runtime.md"

# A consumer project of its own, outside the source tree.
mkdir "$work/consumer"
cp "$work/example.c" "$work/consumer/"
cat > "$work/consumer/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(attn_consumer C)
find_package(Attn ${ATTN_WANTED} REQUIRED)
add_executable(example example.c)
target_link_libraries(example PRIVATE Attn::attnrt)
EOF
cmake -S "$work/consumer" -B "$work/with-cmake" -G Ninja -DCMAKE_C_COMPILER=clang-22 \
  -DCMAKE_PREFIX_PATH="$prefix" -DATTN_WANTED="${version%.*}" > "$work/cmake.log" ||
  { cat "$work/cmake.log"; fail "find_package(Attn ${version%.*}) failed"; }
cmake --build "$work/with-cmake" > "$work/build.log" || { cat "$work/build.log"; fail "building with find_package"; }
# Before 1.0 only the same major.minor is compatible.
for wanted in 0.1 9.0; do
  if cmake -S "$work/consumer" -B "$work/wrong-$wanted" -G Ninja -DCMAKE_C_COMPILER=clang-22 \
      -DCMAKE_PREFIX_PATH="$prefix" -DATTN_WANTED="$wanted" > "$work/wrong.log" 2>&1; then
    fail "find_package(Attn $wanted) accepted version $version"
  fi
  grep -q "not compatible\|not found\|Could not find a configuration file" "$work/wrong.log" ||
    { cat "$work/wrong.log"; fail "find_package(Attn $wanted) failed for another reason"; }
done

export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
[[ $(pkg-config --modversion attnrt) == "$version" ]] || fail "pkg-config --modversion attnrt"
# shellcheck disable=SC2046
clang-22 "$work/example.c" $(pkg-config --cflags --libs attnrt) \
  -Wl,-rpath,"$(pkg-config --variable=libdir attnrt)" -o "$work/with-pkg-config"

# A writable copy of the model folder (links to its files), so the compiled
# library is cached here; the installed attn-compile compiles it.
mkdir "$work/model"
for file in "$model"/*; do ln -s "$file" "$work/model/"; done
prompt="It is a truth universally acknowledged"
for example in "$work/with-cmake/example" "$work/with-pkg-config"; do
  loads=$(ldd "$example")
  grep -q "libattnrt.so.${version%%.*} => $prefix/" <<<"$loads" ||
    fail "$example does not load the installed libattnrt: $loads"
  out=$(env -u ATTN_COMPILE PATH=/usr/bin:/bin "$example" "$work/model" "$prompt")
  [[ $out == "$prompt"* ]] || fail "$example printed: $out"
  grep -Eq "[a-z]+ [a-z]+ [a-z]+" <<<"${out#"$prompt"}" || fail "$example printed: $out"
done
recorded=$(find "$work/model/.attn" -name "*.so" -exec strings {} + |
  grep -cF '"attn_version":"'"$version"'"' || true)
[[ $recorded -ge 1 ]] || fail "the compiled model's manifest does not record attn-compile $version"
# The Python package from the prefix finds the prefix's libattnrt.
if /usr/bin/python3 -c "import numpy" 2> /dev/null; then
  out=$(PYTHONPATH="$prefix/$libdir/python3/dist-packages" /usr/bin/python3 -c \
    'import attn, sys; m = attn.Model(sys.argv[1]); print(attn.__file__); print(attn.version()); print(m.generate("It is", max_tokens=4))' \
    "$work/model")
  [[ $(sed -n 1p <<<"$out") == "$prefix/$libdir/python3/dist-packages/attn/__init__.py" ]] ||
    fail "python imported another attn: $out"
  [[ $(sed -n 2p <<<"$out") == "$version" ]] || fail "attn.version() from the prefix: $out"
fi
echo "ok: installed into a prefix, built the C example with find_package and pkg-config, ran both"
