#!/usr/bin/env bash
# Builds kiln and runs the main job: a training run (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_PERF=OFF
cmake --build build -j"$(nproc)" --target train_mlp
./build/examples/train_mlp "$@"
