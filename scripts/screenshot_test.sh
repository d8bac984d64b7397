#!/bin/sh
# Starts the real attention-atlas under Xvfb on the default preset, lets it run the sample
# text, saves a screenshot (the app's own --screenshot) and checks the PNG is not blank.
#   scripts/screenshot_test.sh PATH/TO/attention-atlas OUT.png
# Exit 0 = pass, 77 = skipped (no xvfb-run or python3), anything else = fail.
set -eu
app=${1:?usage: screenshot_test.sh APP OUT.png}
out=${2:-screenshot.png}
here=$(cd "$(dirname "$0")" && pwd)

if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "skip: xvfb-run not installed (apt-get install xvfb)"; exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "skip: python3 not found (needed to inspect the PNG)"; exit 77
fi
rm -f "$out"
# A private settings folder unless the caller set one: the test must not depend on a saved
# layout nor change it.
if [ -z "${XDG_CONFIG_HOME:-}" ]; then
  XDG_CONFIG_HOME=$(mktemp -d); export XDG_CONFIG_HOME
fi
unset QT_QPA_PLATFORM || true
xvfb-run -a -s "-screen 0 1400x900x24" "$app" --screenshot "$out"
[ -s "$out" ] || { echo "FAIL: no screenshot written to $out"; exit 1; }
python3 "$here/check_png.py" "$out"
