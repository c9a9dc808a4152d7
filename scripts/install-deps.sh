#!/usr/bin/env bash
# Installs every Debian 12 package graft needs to build, test and run
# (docs/building.md). Idempotent and non-interactive: when everything is
# already installed it only checks, which takes well under a second.
#
#   scripts/install-deps.sh          install what is missing (as root, or via sudo)
#   scripts/install-deps.sh --list   print the package names and exit
#
# GRAFT_SKIP_INSTALL=1 skips it (a machine prepared some other way).
# The CUDA Toolkit is not a Debian package; graft finds it at /usr/local/cuda.
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ ccache pkg-config
  # core: status/strings/containers, the command line
  libabsl-dev libcli11-dev libxxhash-dev
  # serialization and ONNX import
  libprotobuf-dev protobuf-compiler libonnx-dev
  # optional parts: CPU JIT, oneDNN, Graphviz rendering. LLVM's static
  # libraries link zstd, which llvm-19-dev does not pull in.
  llvm-19-dev libzstd-dev libdnnl-dev libgraphviz-dev
  # tests and benchmarks (lit and FileCheck ship in llvm-19-tools)
  libgtest-dev libgmock-dev libbenchmark-dev llvm-19-tools python3
  # sanitizer and fuzzer runtimes (libFuzzer needs clang)
  clang-19 libclang-rt-19-dev
)

if [[ "${1:-}" == --list ]]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi
if [[ $# -gt 0 ]]; then
  echo "usage: $0 [--list]" >&2
  exit 2
fi

if [[ "${GRAFT_SKIP_INSTALL:-0}" == 1 ]]; then
  echo "install-deps: GRAFT_SKIP_INSTALL=1, not checking Debian packages"
  exit 0
fi

# One dpkg-query for all packages keeps the already-installed case fast. It
# exits non-zero when it has never heard of a package (a fresh machine).
installed=" $({ dpkg-query -W -f='${Package}=${Status}\n' "${packages[@]}" 2>/dev/null || true; } |
             sed -n 's/=install ok installed$//p' | tr '\n' ' ') "
missing=()
for p in "${packages[@]}"; do
  [[ "$installed" == *" $p "* ]] || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} Debian packages present"
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null; then
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run this script as root (or install sudo) to install them" >&2
    exit 1
  fi
  sudo_cmd=(sudo)
fi

# Never prompt (tzdata, debconf), keep existing config files, and wait for
# another apt/dpkg process (e.g. unattended-upgrades on a fresh machine)
# instead of failing on its lock.
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=3
          -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

echo "install-deps: installing ${missing[*]}"
echo "+ apt-get update"
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" update -qq
echo "+ apt-get install -y --no-install-recommends ${missing[*]}"
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -qq \
  --no-install-recommends "${missing[@]}"
echo "install-deps: done"
