#!/usr/bin/env bash
# Runs one libFuzzer target for a while from seed files, and reports what it
# did. Findings (crash-*, leak-*, timeout-* files) are kept in the output
# folder and make the run fail.
#
#   fuzz/run-fuzzer.sh FUZZER SECONDS SEED_DIR...
#
# Seeds: every regular file under each SEED_DIR whose name ends in .graft,
# .gpb or .onnx (other files are not inputs of any fuzzer). The corpus the
# run grows goes to $GRAFT_FUZZ_OUT/<fuzzer>/corpus (default: a temporary
# folder, removed unless something was found).
set -euo pipefail
if [[ $# -lt 2 ]]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
fuzzer=$(realpath "$1") seconds=$2
shift 2
name=$(basename "$fuzzer")
out=${GRAFT_FUZZ_OUT:-$(mktemp -d)}/$name
mkdir -p "$out/corpus" "$out/seeds"
# Numbered copies: seeds of different folders may share a name (model.onnx).
n=0
for dir in "$@"; do
  [[ -d "$dir" ]] || continue
  while IFS= read -r -d '' file; do
    n=$((n + 1))
    cp "$file" "$out/seeds/$n-$(basename "$file")"
  done < <(find "$dir" -type f \( -name '*.graft' -o -name '*.gpb' -o -name '*.onnx' -o -name '*.gcx' \) \
             -size -1024k -print0)
done
echo "$name: $(ls "$out/seeds" | wc -l) seed files, ${seconds}s"
cd "$out"
status=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=262144 -print_final_stats=1 corpus seeds > log.txt 2>&1 || status=$?
grep -E "^(Done|stat::number_of_executed_units|stat::new_units_added)|ERROR|SUMMARY" log.txt || true
if [[ $status != 0 ]] || ls crash-* leak-* timeout-* oom-* >/dev/null 2>&1; then
  echo "$name: FOUND A PROBLEM; log and inputs in $out" >&2
  tail -40 log.txt >&2
  exit 1
fi
echo "$name: no findings"
[[ -n "${GRAFT_FUZZ_OUT:-}" ]] || rm -rf "$(dirname "$out")"
