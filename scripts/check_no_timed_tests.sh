#!/usr/bin/env bash
# Fails when a test source reads a wall clock or asserts on elapsed time. On a shared 2-core
# machine, and under sanitizers, such a test fails at random; speed claims belong in bench/
# (ratios to a same-run baseline, docs/PERFORMANCE.md) and complexity guards assert counts.
#
# A line may read a clock only as a deadline for waiting (never asserted on) and must say so
# with the marker "wall-clock-ok:" and its reason on the same line.
#
# Usage: check_no_timed_tests.sh [TESTS_DIR]   (default: tests/ beside this script)
#        check_no_timed_tests.sh --self-test   (shows the check catches what it should)
set -euo pipefail

clock_re='steady_clock|system_clock|high_resolution_clock|QElapsedTimer|QDeadlineTimer|std::clock *\(|[^_a-z]clock *\( *\)|clock_gettime|gettimeofday|currentMSecsSinceEpoch|QTime::currentTime|time *\( *(nullptr|NULL|0) *\)'
assert_re='(CHECK|REQUIRE)[A-Z_]*\(.*\b(ms|millis|msec|seconds|secs|elapsed|duration|time|timing)[A-Za-z_]*\b *[<>]'

scan() {
  local dir=$1 found
  found=$(grep -rnE --include='*.cpp' --include='*.h' --include='*.hpp' \
            -e "$clock_re" -e "$assert_re" "$dir" | grep -v 'wall-clock-ok:' || true)
  if [ -n "$found" ]; then
    echo "check_no_timed_tests: tests read a wall clock or assert elapsed time:" >&2
    echo "$found" >&2
    echo "Move the timing to bench/ and assert a count, or mark a wait deadline 'wall-clock-ok: why'." >&2
    return 1
  fi
  return 0
}

if [ "${1:-}" = "--self-test" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # Each sample must be caught on its own; a marked deadline must pass.
  samples=(
    'const auto t0 = std::chrono::steady_clock::now();'
    'CHECK(ms < 1000);'
    'REQUIRE(elapsed_seconds <= 2.0);'
    'QElapsedTimer timer;'
    'const double t = 1000.0 * std::clock() / CLOCKS_PER_SEC;'
  )
  for s in "${samples[@]}"; do
    printf '%s\n' "$s" > "$tmp/test_sample.cpp"
    if scan "$tmp" 2>/dev/null; then
      echo "check_no_timed_tests --self-test: not caught: $s" >&2
      exit 1
    fi
  done
  printf '%s\n' 'QElapsedTimer timer;  // wall-clock-ok: a deadline for waiting' \
                'CHECK(count < 1000);' > "$tmp/test_sample.cpp"
  if ! scan "$tmp"; then
    echo "check_no_timed_tests --self-test: a marked deadline or a count was refused" >&2
    exit 1
  fi
  echo "check_no_timed_tests --self-test: 5 timed samples caught, 2 allowed lines passed"
  exit 0
fi

dir=${1:-"$(dirname "$0")/../tests"}
scan "$dir"
echo "check_no_timed_tests: no test reads a wall clock or asserts elapsed time"
