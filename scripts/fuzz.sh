#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR/tests/fuzz (build/asan or build/fuzz) for SECONDS each,
# JOBS targets at a time (default: the number of cores; each target is one process on one core);
# any crash fails.
set -euo pipefail
build=${1:-build/asan}
seconds=${2:-20}
jobs=${3:-$(nproc)}

# Fuzzes one target; prints one line, or the end of its log when it fails.
fuzz_one() {
  local target=$1 name corpus seeds
  name=$(basename "$target")
  corpus="$build/corpus/$name"
  mkdir -p "$corpus"
  seeds="tests/fuzz/seeds/${name#fuzz_}"
  [ -d "$seeds" ] || seeds=""
  if ! "$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -artifact_prefix="$build/" "$corpus" $seeds >"$build/$name.log" 2>&1; then
    echo "fuzz: $name FAILED; last lines of $build/$name.log:" >&2
    tail -40 "$build/$name.log" >&2
    return 1
  fi
  echo "fuzz: $name for ${seconds}s: $(grep -E "^(#[0-9]+\s+DONE|Done)" "$build/$name.log" | tail -1)"
}

pids=()
for target in "$build"/tests/fuzz/fuzz_*; do
  [ -x "$target" ] || continue
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 0.2; done
  fuzz_one "$target" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done  # each target's own exit status
exit $status
