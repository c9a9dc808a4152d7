#!/usr/bin/env bash
# Downloads the Debian 12 packages graft needs to BUILD on a machine that has
# the CUDA Toolkit and protobuf but no Debian packages (an offline GPU box),
# into .bundle/ (or the folder given). Run it on a Debian 12 amd64 machine
# with network access; it needs no root (apt-get download writes to the
# current folder). Copy the folder over and unpack it there with
# scripts/unpack-offline-bundle.sh.
#
#   scripts/make-offline-bundle.sh [BUNDLE_DIR]
#
# Only what the build and the tests use is listed, not the packages' full
# dependency closure (a compiler, libc, libstdc++, python3, zlib and zstd are
# expected on the box already), which keeps the bundle near 10 MB:
#   absl, CLI11, gtest/gmock, Google Benchmark, and FileCheck + lit from
#   llvm-19-tools (FileCheck links libz3), and libonnx for ONNX import (its
#   protobuf, 3.21, is expected on the box).
# Running it again downloads only what is missing or of another version.
set -euo pipefail

packages=(
  libabsl-dev libabsl20220623        # headers + CMake config, shared libraries
  libcli11-dev                       # header-only
  libxxhash-dev                      # header-only use (XXH_INLINE_ALL)
  libgtest-dev libgmock-dev          # static libraries + CMake config
  libbenchmark-dev libbenchmark1debian
  llvm-19-tools libz3-4              # FileCheck, lit, not; FileCheck needs libz3.so.4
  libonnx-dev libonnx1 libonnxifi    # ONNX import (built against protobuf 3.21, libprotobuf.so.32,
                                     # which the box must have: the GPU machines do)
)

cd "$(dirname "${BASH_SOURCE[0]}")/.."
bundle=${1:-.bundle}
mkdir -p "$bundle"
bundle=$(cd "$bundle" && pwd)

if [[ "$(dpkg --print-architecture 2>/dev/null)" != amd64 ]]; then
  echo "make-offline-bundle: run this on a Debian 12 amd64 machine" >&2
  exit 1
fi

# The exact file names and checksums of the current candidates. apt-get
# prints nothing useful before the package lists exist (fresh machine).
uris() { apt-get download --print-uris "${packages[@]}" 2>/dev/null; }
if ! listing=$(uris) || [[ -z "$listing" ]]; then
  echo "make-offline-bundle: no package lists; running apt-get update"
  if [[ $(id -u) -eq 0 ]]; then apt-get update -qq; else sudo apt-get update -qq; fi
  listing=$(uris)
fi

wanted=()
need=()
while read -r _uri file _size sum; do
  wanted+=("$file")
  if [[ -f "$bundle/$file" ]] &&
     [[ "$(sha256sum "$bundle/$file" | cut -d' ' -f1)" == "${sum#SHA256:}" ]]; then
    continue
  fi
  need+=("${file%%_*}")
done <<<"$listing"

if [[ ${#need[@]} -gt 0 ]]; then
  echo "make-offline-bundle: downloading ${need[*]} into $bundle"
  # As root, apt would try its unprivileged _apt user on a folder it may not
  # be able to write, and warn; the download is the same either way.
  sandbox=()
  [[ $(id -u) -ne 0 ]] || sandbox=(-o APT::Sandbox::User=root)
  (cd "$bundle" && apt-get "${sandbox[@]}" download "${need[@]}")
else
  echo "make-offline-bundle: all ${#wanted[@]} packages already in $bundle"
fi

# Drop other versions left from an earlier run, then record what is there.
for f in "$bundle"/*.deb; do
  name=${f##*/}
  [[ " ${wanted[*]} " == *" $name "* ]] || { echo "removing stale $name"; rm -f "$f"; }
done
(cd "$bundle" && sha256sum "${wanted[@]}" >SHA256SUMS)

echo
echo "Bundle: $bundle ($(du -sh "$bundle" | cut -f1), ${#wanted[@]} packages)"
echo "Copy the repository (with .bundle/) or just the bundle to the GPU box and run there:"
if [[ $bundle == "$PWD/.bundle" ]]; then
  echo "  scripts/unpack-offline-bundle.sh"
else
  echo "  scripts/unpack-offline-bundle.sh $bundle"
fi
