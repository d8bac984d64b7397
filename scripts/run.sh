#!/usr/bin/env bash
# Sets up, builds and opens Attention Atlas on the built-in default model with a sample input.
# Extra arguments go to the app (e.g. --model preset:tiny-decoder --text "...").
# With no display (a server or CI), the app runs under Xvfb and saves a screenshot instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "${JOBS:-$(nproc)}" --target attention-atlas atlas
app=build/release/app/attention-atlas
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec "$app" "$@"
fi
shot=${SCREENSHOT:-build/release/attention-atlas.png}
echo "run.sh: no display; running under Xvfb and saving a screenshot to $shot"
xvfb-run -a -s "-screen 0 1600x1000x24" "$app" --screenshot "$shot" "$@"
echo "run.sh: screenshot saved to $shot"
