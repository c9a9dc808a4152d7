#!/usr/bin/env bash
# On a GPU machine without Debian packages: unpack the offline bundle, build
# the CUDA backend's tests and benchmark, run the tests, then
# bench/cuda_vs_torch.py (GRAFT_BENCH=multi-gpu: bench/multi_gpu_vs_torch.py).
# Logs go to ${OUT:-/tmp}/; the last lines printed are the test summary and
# the benchmark table. NCCL comes from the CUDA Toolkit, else from PyTorch's
# wheel (nvidia.nccl).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp}
scripts/unpack-offline-bundle.sh > "$out/unpack.log" 2>&1 || { tail "$out/unpack.log"; exit 1; }
nccl_args=()
if [ ! -f /usr/local/cuda/include/nccl.h ]; then
  nccl=$(python3 -c "import nvidia.nccl as n; print(list(n.__path__)[0])" 2>/dev/null)
  if [ -n "$nccl" ]; then
    nccl_args=(-DGRAFT_NCCL_INCLUDE_DIR="$nccl/include")
    export GRAFT_NCCL_LIBRARY="$nccl/lib/libnccl.so.2"
  fi
fi
cmake --preset gpu-offline "${nccl_args[@]}" > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
cmake --build --preset gpu-offline -j "$(nproc)" --target cuda_tests gpu_run graft \
  > "$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -40; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
GRAFT_SOURCE_DIR=$PWD build-gpu/tests/cuda_tests ${GRAFT_GTEST_FILTER:+--gtest_filter=$GRAFT_GTEST_FILTER} \
  > "$out/cuda_tests.log" 2>&1
echo "cuda_tests exit $?"
grep -E "^\[  FAILED|Failure|error|^\[  PASSED|^\[  SKIPPED \] [0-9]" "$out/cuda_tests.log" | head -40
if [ "${GRAFT_SKIP_BENCH:-0}" != 1 ]; then
  if [ "${GRAFT_BENCH:-}" = multi-gpu ]; then
    PYTHONUNBUFFERED=1 python3 bench/multi_gpu_vs_torch.py build-gpu > "$out/bench.log" 2>&1
  else
    PYTHONUNBUFFERED=1 python3 bench/cuda_vs_torch.py build-gpu ${GRAFT_TORCH_MODES:+--modes $GRAFT_TORCH_MODES} \
      ${GRAFT_BENCH_WORKLOADS:+--workloads $GRAFT_BENCH_WORKLOADS} \
      > "$out/bench.log" 2>&1
  fi
  tail -12 "$out/bench.log"
fi
