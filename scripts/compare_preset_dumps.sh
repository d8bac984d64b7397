#!/usr/bin/env bash
# Shows that a change leaves every preset's outputs and traced arrays bit-identical (CPU):
#   scripts/compare_preset_dumps.sh BUILD_DIR OUT_DIR           dumps every preset into OUT_DIR
#   scripts/compare_preset_dumps.sh BUILD_DIR OUT_DIR REF_DIR   ... and compares with REF_DIR,
# where REF_DIR was dumped the same way by a build of the commit before the change. Exits 1
# naming each file that differs or exists on one side only.
# A new source file shifts the release build's unity batches (eight files each, in path order),
# and a file compiled beside other partners may be inlined and contracted (FMA) differently: the
# last bits of a few presets can move without any change of meaning. To tell such a change from
# one of meaning, build the commit before it with empty files at the new files' paths (the same
# batches) and compare with that build's dumps.
set -euo pipefail
build=${1:?usage: compare_preset_dumps.sh BUILD_DIR OUT_DIR [REF_DIR]}
out=${2:?usage: compare_preset_dumps.sh BUILD_DIR OUT_DIR [REF_DIR]}
ref=${3:-}
rm -rf "$out"
"$build/tests/dump_presets" "$out"
[ -z "$ref" ] && exit 0
if diff -r -q "$ref" "$out"; then
  echo "compare_preset_dumps: $(find "$out" -type f | wc -l) files in $(ls "$out" | wc -l) preset dumps bit-identical to $ref"
else
  echo "compare_preset_dumps: the dumps differ (above)" >&2
  exit 1
fi
