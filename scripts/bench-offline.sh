#!/usr/bin/env bash
# Builds graft's graph-surgery benchmarks on a machine without Debian
# packages (dependencies from the offline bundle, see
# scripts/unpack-offline-bundle.sh) and runs the figures docs/benchmarks.md
# quotes: build, print and parse at 1M nodes; ReplacePattern and the greedy
# driver at every size.
#
#   scripts/bench-offline.sh [BASELINE_SOURCE_DIR]
#
# With BASELINE_SOURCE_DIR (another graft source tree, e.g. one made by
# `git archive`), builds that too and runs the two alternately, twice each,
# so that before and after come from the same host. Each benchmark repeats
# five times; prints the median and the fastest of each, prefixed with "new"
# or "base".
# ROUNDS (default 2) sets how many times each tree runs; the benchmarks run
# pinned to one core (taskset) where that exists, which steadies them.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
baseline=${1:-}
jobs=$(nproc)

build() {
  local dir=$1
  (
    cd "$dir"
    [[ -e .bundle ]] || ln -s "$repo/.bundle" .bundle
    cmake --preset gpu-offline -DGRAFT_BUILD_TESTS=OFF -DGRAFT_WITH_CUDA=OFF >/dev/null
    cmake --build build-gpu -j "$jobs" --target graph_ops rewrite >/dev/null
  )
}

pin=()
command -v taskset >/dev/null && pin=(taskset -c 1)

# Runs a benchmark program five times over; prints, per benchmark, the
# median and the fastest of the five (the fastest is the least disturbed by
# other work on a shared host).
median() {
  local label=$1
  shift
  "${pin[@]}" "$@" --benchmark_repetitions=5 2>/dev/null |
    awk -v l="$label" '
      /^BM_/ && $1 !~ /_(mean|median|stddev|cv)$/ {
        ms = ($3 == "ms") ? $2 : ($3 == "s" ? $2 * 1000 : $2 / 1000)
        if (!($1 in best) || ms < best[$1]) best[$1] = ms
      }
      /^BM_.*_median / {
        name = $1; sub(/_median$/, "", name)
        printf "%-5s %-36s median %8s %s  fastest %8.1f ms\n", l, name, $2, $3, best[name]
      }'
}

run() {
  local label=$1 dir=$2
  median "$label" "$dir/build-gpu/bench/graph_ops" \
    --benchmark_filter='BM_Build/nodes:1000000|BM_Print/1000000|BM_Parse'
  median "$label" "$dir/build-gpu/bench/rewrite" \
    --benchmark_filter='BM_ReplacePattern|BM_GreedyDriver'
}

scripts/unpack-offline-bundle.sh >/dev/null
build "$repo"
if [[ -n "$baseline" ]]; then
  build "$baseline"
fi
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for ((round = 1; round <= ${ROUNDS:-2}; round++)); do
  [[ -n "$baseline" ]] && run base "$baseline"
  run new "$repo"
done
