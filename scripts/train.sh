#!/usr/bin/env bash
# Builds kiln and runs the main job: `kiln train` on Fashion-MNIST from Debian's
# dataset-fashion-mnist (see README). Arguments go to `kiln train` (e.g. --model cnn --epochs 3).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh dataset-fashion-mnist libgloo-dev  # Gloo: kiln train --nproc-per-node
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_PERF=OFF -DKILN_BUILD_EXAMPLES=OFF
cmake --build build -j"$(nproc)" --target kiln_cli
./build/cli/kiln train "$@"
