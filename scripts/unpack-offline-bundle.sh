#!/usr/bin/env bash
# Unpacks the offline bundle made by scripts/make-offline-bundle.sh into a
# prefix (no root, no package manager: the .deb files are only extracted) and
# prints how to build graft against it.
#
#   scripts/unpack-offline-bundle.sh [BUNDLE_DIR [PREFIX]]
#
# Defaults: BUNDLE_DIR=.bundle, PREFIX=BUNDLE_DIR/prefix, which is where the
# gpu-offline CMake preset looks. Uses `dpkg -x` where dpkg exists, else `ar`
# and `tar` (any Linux box with binutils). Running it again skips packages
# already unpacked.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
bundle=${1:-.bundle}
if [[ ! -d "$bundle" ]]; then
  echo "unpack-offline-bundle: no bundle folder $bundle (make one with scripts/make-offline-bundle.sh)" >&2
  exit 1
fi
bundle=$(cd "$bundle" && pwd)
prefix=${2:-$bundle/prefix}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
stamps=$prefix/.unpacked
mkdir -p "$stamps"

shopt -s nullglob
debs=("$bundle"/*.deb)
if [[ ${#debs[@]} -eq 0 ]]; then
  echo "unpack-offline-bundle: no .deb files in $bundle" >&2
  exit 1
fi
if [[ -f "$bundle/SHA256SUMS" ]]; then
  echo "+ sha256sum -c SHA256SUMS"
  (cd "$bundle" && sha256sum --quiet -c SHA256SUMS)
fi

extract() {
  local deb=$1 dest=$2
  if command -v dpkg >/dev/null; then
    dpkg -x "$deb" "$dest"
    return
  fi
  local tmp data
  tmp=$(mktemp -d)
  (cd "$tmp" && ar x "$deb")
  data=("$tmp"/data.tar.*)
  tar -xf "${data[0]}" -C "$dest"
  rm -rf "$tmp"
}

for deb in "${debs[@]}"; do
  name=${deb##*/}
  if [[ -f "$stamps/$name" ]]; then
    continue
  fi
  echo "unpacking $name"
  extract "$deb" "$prefix"
  touch "$stamps/$name"
done

# Sanity: the CMake packages graft's build looks for.
lib=$prefix/usr/lib/x86_64-linux-gnu
missing=0
for f in "$lib/cmake/absl/abslConfig.cmake" \
         "$prefix/usr/share/cmake/CLI11/CLI11Config.cmake" \
         "$lib/cmake/GTest/GTestConfig.cmake" \
         "$lib/cmake/benchmark/benchmarkConfig.cmake" \
         "$prefix/usr/lib/llvm-19/bin/FileCheck" \
         "$prefix/usr/lib/llvm-19/build/utils/lit/lit.py"; do
  if [[ ! -e "$f" ]]; then
    echo "unpack-offline-bundle: missing $f" >&2
    missing=1
  fi
done
[[ $missing == 0 ]] || exit 1

cat <<EOF

Unpacked into $prefix

CMAKE_PREFIX_PATH=$prefix/usr

Build graft with CUDA (ORC and Graphviz off):
EOF
if [[ "$prefix" == "$repo/.bundle/prefix" ]]; then
  cat <<EOF
  cmake --preset gpu-offline && cmake --build --preset gpu-offline
  ctest --preset gpu-offline
EOF
else
  cat <<EOF
  export LD_LIBRARY_PATH=$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \\
        -DCMAKE_PREFIX_PATH=$prefix/usr \\
        -DCMAKE_PROGRAM_PATH=$prefix/usr/lib/llvm-19/bin \\
        -DGRAFT_LLVM_TOOLS_DIR=$prefix/usr/lib/llvm-19/bin \\
        -DGRAFT_LIT_PY=$prefix/usr/lib/llvm-19/build/utils/lit/lit.py \\
        -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags \\
        -DGRAFT_WITH_ORC=OFF -DGRAFT_WITH_GRAPHVIZ=OFF
  cmake --build build-gpu
  ctest --test-dir build-gpu --output-on-failure
EOF
fi
cat <<EOF

Programs built this way find the bundle's shared libraries through their
RPATH (DT_RPATH, which also covers the libraries' own dependencies).
FileCheck, the test discovery that runs during the build, and an installed
graft also need LD_LIBRARY_PATH=$lib
(the gpu-offline preset sets it for configure, build and test).
EOF
