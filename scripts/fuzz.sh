#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR/tests/fuzz (build/asan or build/fuzz) for SECONDS each; any crash fails.
set -euo pipefail
build=${1:-build/asan}
seconds=${2:-20}
status=0
for target in "$build"/tests/fuzz/fuzz_*; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  corpus="$build/corpus/$name"
  mkdir -p "$corpus"
  seeds="tests/fuzz/seeds/${name#fuzz_}"
  [ -d "$seeds" ] || seeds=""
  echo "fuzz: $name for ${seconds}s"
  if ! "$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$build/" "$corpus" $seeds >"$build/$name.log" 2>&1; then
    echo "fuzz: $name FAILED; last lines of $build/$name.log:" >&2
    tail -40 "$build/$name.log" >&2
    status=1
  else
    grep -E "^(#[0-9]+\s+DONE|Done)" "$build/$name.log" | tail -1 || true
  fi
done
exit $status
