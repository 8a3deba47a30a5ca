#!/usr/bin/env bash
# Installs the Debian packages attn builds and tests with, when missing.
# Idempotent: a machine that has them all runs no apt-get at all.
set -euo pipefail

packages=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22
  libomp-22-dev libclang-rt-22-dev libzstd-dev
  cmake ninja-build libgtest-dev python3 time
  libopenblas-dev nlohmann-json3-dev libpcre2-dev libutf8proc-dev libpng-dev pkg-config
  libcpp-httplib-dev
  libopenmpi-dev openmpi-bin
  dpkg-dev file binutils lintian
  python3-numpy python3-pytest python3-setuptools python3-pip
  chromium
)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
