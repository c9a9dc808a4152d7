#!/usr/bin/env bash
# Installs every Debian package graft needs to build, test and run.
# Idempotent and non-interactive; safe to run again.
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ ccache pkg-config
  # core
  libabsl-dev libcli11-dev
  # serialization and ONNX import
  libprotobuf-dev protobuf-compiler libonnx-dev
  # tests and benchmarks (lit and FileCheck ship in llvm-19-tools)
  libgtest-dev libgmock-dev libbenchmark-dev llvm-19-tools python3
  # sanitizer and fuzzer runtimes
  clang libclang-rt-dev
)

if [[ "${GRAFT_SKIP_INSTALL:-0}" == 1 ]]; then
  echo "install-deps: GRAFT_SKIP_INSTALL=1, skipping apt-get"
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
