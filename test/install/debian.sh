#!/usr/bin/env bash
# Builds the Debian packages with CPack from the build directory into a
# temporary folder and inspects them with dpkg-deb: names, version, that
# every file lies under /usr, the files each holds, and the Depends that
# dpkg-shlibdeps computed (the runtime: libc alone, nothing of
# LLVM; the tools: the runtime of the same version, libMLIR/libLLVM, the link
# driver). lintian, when installed, must report no errors.
# usage: debian.sh BUILD_DIR VERSION
set -euo pipefail
build=$1 version=$2
fail() { echo "error: $*" >&2; exit 1; }
for tool in cpack dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" > /dev/null || { echo "skipped: no $tool"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work" --verbose > "$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; fail "cpack -G DEB failed"; }
runtime=$(ls "$work"/attn-runtime_"$version"*_*.deb 2>/dev/null | head -1)
tools=$(ls "$work"/attn_"$version"*_*.deb 2>/dev/null | head -1)
[[ -f $runtime && -f $tools ]] || { ls "$work"; fail "expected attn-runtime_$version and attn_$version .deb files"; }

field() { dpkg-deb --field "$1" "$2"; }
[[ $(field "$runtime" Package) == attn-runtime ]] || fail "runtime package name"
[[ $(field "$tools" Package) == attn ]] || fail "tools package name"
for deb in "$runtime" "$tools"; do
  [[ $(field "$deb" Version) == "$version"* ]] || fail "$deb: Version $(field "$deb" Version)"
  dpkg-deb --contents "$deb" | awk '{print $6}' | grep -v '^\./$' | grep -v '^\./usr/' &&
    fail "$deb installs files outside /usr"
  true
done

# libattnrt links the C++ runtime and PCRE2 in: libc is all it needs.
runtime_depends=$(field "$runtime" Depends)
[[ $runtime_depends =~ ^libc6\ \(\>=\ [0-9.]+\)$ ]] ||
  fail "attn-runtime should depend on libc6 alone, got: $runtime_depends"
tools_depends=$(field "$tools" Depends)
for needed in "attn-runtime (= $version" libmlir-22 libllvm22 clang-22 libomp-22-dev; do
  grep -qF "$needed" <<<"$tools_depends" ||
    { grep -i "shlibdeps" "$work/cpack.log" | tail -20; fail "attn Depends lacks $needed: $tools_depends"; }
done

grep -q "libomp" <<<"$(field "$runtime" Recommends)" ||
  fail "attn-runtime does not recommend the libomp compiled models load"

runtime_files=$(dpkg-deb --contents "$runtime" | awk '{print $6}')
for pattern in '/libattnrt\.so\.'"${version%%.*}"'$' '/libattnrt\.so$' '/include/attnrt/attnrt\.h$' \
    '/include/attnrt/version\.h$' '/cmake/Attn/AttnConfig\.cmake$' '/pkgconfig/attnrt\.pc$'; do
  grep -Eq "$pattern" <<<"$runtime_files" || fail "attn-runtime lacks $pattern"
done
grep -q "/bin/" <<<"$runtime_files" && fail "attn-runtime holds tools"
tools_files=$(dpkg-deb --contents "$tools" | awk '{print $6}')
for tool in attn-compile attn-opt attn-run attn-tokenize attn-perplexity attn-inspect attn-serve \
    attn-make-model attn-bench; do
  grep -q "^\./usr/bin/$tool$" <<<"$tools_files" || fail "attn lacks /usr/bin/$tool"
done
grep -q "^\./usr/share/doc/attn/install\.md$" <<<"$tools_files" || fail "attn lacks the docs"
grep -q "libattnrt" <<<"$tools_files" && fail "attn holds the runtime library too"

if command -v lintian > /dev/null; then
  for deb in "$runtime" "$tools"; do
    if lintian --no-tag-display-limit "$deb" | grep '^E:'; then
      fail "lintian reports errors on $deb"
    fi
  done
else
  echo "note: lintian is not installed; not run"
fi
echo "ok: $(basename "$runtime") [$runtime_depends], $(basename "$tools") [$tools_depends]"
