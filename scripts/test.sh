#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test.
#   1. Release build of everything but the benchmarks (engine, Vulkan backend on lavapipe, Qt
#      app, test suites) + ctest
#      (including scripts/check_no_timed_tests.sh: no test may assert elapsed time)
#   2. the engine and CLI tests again under AddressSanitizer + UndefinedBehaviorSanitizer
#   3. libFuzzer targets (safetensors, npy, config, tokenizers, HF files, dump manifests), each for
#      FUZZ_SECONDS, built in stage 2 against the same sanitized engine
# Builds, tests and fuzz targets run JOBS at a time (default: the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
fuzz_seconds=${FUZZ_SECONDS:-5}  # short in CI; longer runs: scripts/fuzz.sh DIR SECONDS

scripts/setup.sh

echo "== release build and tests"
# Without the benchmarks (~90 s of compile time the 30-minute CI budget cannot spare; they are
# not tests): scripts/bench.sh configures them back on and builds what it runs.
cmake --preset release -DATLAS_BENCH=OFF >/dev/null
cmake --build --preset release -j "$jobs"
ctest --preset release -j "$jobs"

echo "== ASan + UBSan build and tests"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ctest --preset asan -j "$jobs"

echo "== fuzzing, ${fuzz_seconds}s per target"
scripts/fuzz.sh build/asan "$fuzz_seconds" "$jobs"
echo "test.sh: all passed"
