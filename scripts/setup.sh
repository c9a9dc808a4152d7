#!/usr/bin/env bash
# Sets graft up on a Debian 12 machine and then runs the demo or the tests.
#
#   scripts/setup.sh demo    install dependencies, build into build/, run `graft demo`
#   scripts/setup.sh test    install dependencies, build, run the whole ctest suite;
#                            under CI=true (or with --asan) then also build and run
#                            the suite under ASan + UBSan in build-asan/, and (or
#                            with --fuzz) build the libFuzzer targets with clang in
#                            build-fuzz/ and run each for GRAFT_FUZZ_SECONDS
#
# Options:
#   --asan / --no-asan   run / skip the sanitizer suite (default: run it when CI=true)
#   --fuzz / --no-fuzz   run / skip the fuzzers (default: run them when CI=true)
#   --no-install         do not check or install Debian packages
#   -j N, --jobs N       parallel build and test jobs (default: number of CPUs)
#   -h, --help           this text
#
# Environment:
#   GRAFT_ASAN_START_LIMIT_MIN  skip the sanitizer suite (with a warning) when the steps
#                               before it took longer than this many minutes (default 45;
#                               CI gives the whole run 90); the fuzzers likewise
#   GRAFT_FUZZ_SECONDS          how long each fuzzer runs (default 20)
#
# Every step prints what it runs. Running it again only redoes what is out of
# date: an installed, built tree costs about a second before the demo or the
# tests start. Exits non-zero when any step or test fails.
set -euo pipefail

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; }

mode=""
asan=""
fuzz=""
install=1
jobs=$(nproc 2>/dev/null || echo 2)
while [[ $# -gt 0 ]]; do
  case "$1" in
    demo|test) mode=$1 ;;
    --asan) asan=1 ;;
    --no-asan) asan=0 ;;
    --fuzz) fuzz=1 ;;
    --no-fuzz) fuzz=0 ;;
    --no-install) install=0 ;;
    -j|--jobs) jobs=${2:?"$1 needs a number"}; shift ;;
    -j*) jobs=${1#-j} ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
if [[ -z "$mode" ]]; then
  usage >&2
  exit 2
fi
if [[ -z "$asan" ]]; then
  if [[ "${CI:-}" == true ]]; then asan=1; else asan=0; fi
fi
if [[ -z "$fuzz" ]]; then
  if [[ "${CI:-}" == true ]]; then fuzz=1; else fuzz=0; fi
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$SECONDS

step() { printf '\n==> %s\n' "$*"; }
# Prints a command, runs it, and names it if it fails.
run() {
  printf '+ %s\n' "$*"
  local rc=0
  "$@" || rc=$?
  if [[ $rc != 0 ]]; then
    echo "setup: '$*' failed (exit $rc)" >&2
  fi
  return "$rc"
}
elapsed() {
  local s=$((SECONDS - ${1:-$start}))
  printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# Configures a preset unless its build tree already exists: once configured,
# ninja re-runs cmake by itself whenever a CMakeLists.txt or a globbed folder
# changes, so configuring again would only cost time.
configure() {
  local preset=$1 dir=$2
  if [[ -f "$dir/build.ninja" && -f "$dir/CMakeCache.txt" ]]; then
    echo "$dir/ is configured (preset $preset); ninja re-runs cmake when needed"
    return
  fi
  if [[ -f "$dir/CMakeCache.txt" ]] &&
     ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$dir/CMakeCache.txt"; then
    echo "setup: $dir/ was configured with another generator than Ninja;" \
         "remove it (rm -rf $dir) and run this again" >&2
    exit 1
  fi
  run cmake --preset "$preset"
}

build() {
  local preset=$1
  run cmake --build --preset "$preset" -j "$jobs"
}

run_tests() {
  local preset=$1
  run ctest --preset "$preset" -j "$jobs"
}

step "Debian packages (scripts/install-deps.sh)"
if [[ $install == 1 ]]; then
  run scripts/install-deps.sh
else
  echo "skipped (--no-install)"
fi
if command -v ccache >/dev/null; then
  echo "ccache: $(ccache --get-config cache_dir 2>/dev/null || echo on)"
fi

step "Configure build/ (cmake --preset default)"
configure default build

step "Build build/"
t=$SECONDS
build default
echo "build: $(elapsed "$t")"

status=0
case "$mode" in
  demo)
    step "Run the demo"
    if [[ ! -x build/cli/graft ]]; then
      echo "setup: build/cli/graft was not built; the build above should say why" >&2
      exit 1
    fi
    run build/cli/graft demo || status=$?
    ;;

  test)
    step "Test suite (ctest --preset default)"
    t=$SECONDS
    if run_tests default; then
      echo "tests: passed in $(elapsed "$t")"
    else
      status=1
      echo "tests: FAILED (after $(elapsed "$t"))"
    fi

    if [[ $asan == 1 ]]; then
      limit=${GRAFT_ASAN_START_LIMIT_MIN:-45}
      if (( SECONDS - start > limit * 60 )); then
        step "Sanitizer suite SKIPPED"
        echo "WARNING: the steps so far took $(elapsed), more than" \
             "GRAFT_ASAN_START_LIMIT_MIN=$limit minutes; the ASan + UBSan build would" \
             "risk CI's time limit, so it was not run. Run it with:" \
             "scripts/setup.sh test --asan"
      else
        step "Configure build-asan/ (cmake --preset asan: ASan + UBSan, -O1)"
        configure asan build-asan
        step "Build build-asan/"
        t=$SECONDS
        build asan
        echo "build: $(elapsed "$t")"
        step "Test suite under ASan + UBSan (ctest --preset asan)"
        t=$SECONDS
        if run_tests asan; then
          echo "sanitizer tests: passed in $(elapsed "$t")"
        else
          status=1
          echo "sanitizer tests: FAILED (after $(elapsed "$t"))"
        fi
      fi
    fi

    if [[ $fuzz == 1 ]]; then
      limit=${GRAFT_ASAN_START_LIMIT_MIN:-45}
      if (( SECONDS - start > (limit + 15) * 60 )); then
        step "Fuzzers SKIPPED"
        echo "WARNING: the steps so far took $(elapsed); building the fuzzers would" \
             "risk CI's time limit, so they were not run. Run them with:" \
             "scripts/setup.sh test --fuzz"
      else
        step "Configure build-fuzz/ (cmake --preset fuzz: clang, libFuzzer, ASan + UBSan)"
        configure fuzz build-fuzz
        step "Build the fuzzers"
        t=$SECONDS
        build fuzz
        echo "build: $(elapsed "$t")"
        step "Fuzz each target for ${GRAFT_FUZZ_SECONDS:-20}s (ctest --preset fuzz)"
        if [[ -n "${GRAFT_FUZZ_SECONDS:-}" ]]; then
          run cmake -DGRAFT_FUZZ_SECONDS="$GRAFT_FUZZ_SECONDS" build-fuzz >/dev/null
        fi
        if run ctest --preset fuzz -V; then
          echo "fuzzers: no findings"
        else
          status=1
          echo "fuzzers: FOUND PROBLEMS (see above)"
        fi
      fi
    fi
    ;;
esac

step "Done in $(elapsed)"
if [[ $status != 0 ]]; then
  echo "setup: FAILED (see the output above)" >&2
fi
exit "$status"
