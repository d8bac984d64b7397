#!/bin/sh
# Regenerates docs/images/layout-*.png: the app's default layout (the first screen after a run
# of the model's default input) for each model kind, from the current build, under Xvfb at the
# default window size. Look at every PNG before committing them (the script cannot judge them).
#   scripts/screenshots.sh [BUILD_DIR] [OUT_DIR]   (defaults: build/release, docs/images)
# The GGUF Llama shot: bench/make_llama_gguf.cpp (a standalone program, compiled here with g++)
# writes a 2-layer Llama-3.2-1B-shaped Q4_K_M file with random weights to a temporary folder.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build/release}
out=${2:-$here/../docs/images}
app=$build/app/attention-atlas
[ -x "$app" ] || { echo "no $app: build the attention-atlas target first" >&2; exit 1; }
command -v xvfb-run >/dev/null 2>&1 || { echo "xvfb-run is missing: apt-get install xvfb" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A private settings folder: a saved layout must not change the shots, nor the shots it.
XDG_CONFIG_HOME=$tmp/config; export XDG_CONFIG_HOME
unset QT_QPA_PLATFORM || true

shot() {  # shot NAME MODEL [app options...]
  name=$1 model=$2
  shift 2
  xvfb-run -a -s "-screen 0 1600x1000x24" "$app" --model "$model" "$@" --screenshot "$out/layout-$name.png"
  python3 "$here/check_png.py" "$out/layout-$name.png"
  echo "wrote $out/layout-$name.png"
}

shot text-decoder demo:induction
shot encoder-decoder preset:tiny-encoder-decoder
shot tiny-vit preset:tiny-vit
shot tiny-xl preset:tiny-xl
shot tiny-ut-act preset:tiny-ut-act
shot tiny-reformer preset:tiny-reformer
shot demo-parity-act demo:parity-act
g++ -std=c++20 -O2 "$here/../bench/make_llama_gguf.cpp" -o "$tmp/make_llama_gguf"
"$tmp/make_llama_gguf" --shape 1b --type q4_k_m --layers 2 -o "$tmp/llama-1b-2layers-q4_k_m.gguf"
shot gguf-llama "$tmp/llama-1b-2layers-q4_k_m.gguf"
