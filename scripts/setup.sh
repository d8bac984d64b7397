#!/usr/bin/env bash
# Installs the Debian packages Attention Atlas builds and tests with, only those missing.
# Needs root or sudo when something is missing; does nothing (and needs neither) otherwise.
set -euo pipefail

packages=(
  cmake ninja-build g++ clang libclang-rt-14-dev pkg-config
  libeigen3-dev nlohmann-json3-dev catch2
  qt6-base-dev qt6-charts-dev qt6-svg-dev libgl-dev fonts-dejavu-core
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  xvfb xauth
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

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
