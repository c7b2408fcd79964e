#!/usr/bin/env bash
# Installs the Debian packages kiln builds with (Debian 12, as root). Used by both quick-start
# commands; a no-op when everything is already there.
set -euo pipefail
packages=(cmake make g++ pkg-config libopenblas-dev libhalide14-0-dev libtbb-dev libspdlog-dev libfmt-dev
          libgtest-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev zlib1g-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
