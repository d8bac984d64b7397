#!/usr/bin/env bash
# Runs the benchmarks of bench/ on a release build and prints their JSON lines.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset release -DATLAS_BENCH=ON >/dev/null  # test.sh builds without them
cmake --build --preset release --target bench_forward atlas >/dev/null
build/release/bench/bench_forward "$@"
