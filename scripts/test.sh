#!/usr/bin/env bash
# Builds kiln with its tests and benchmarks, and runs the test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/check_includes.sh  # fails at once on an include pointing up the pipeline
bash scripts/check_format.sh    # and on a C++ file clang-format would change
bash scripts/deps.sh dataset-fashion-mnist libgloo-dev openmpi-bin  # the parity tests train on Fashion-MNIST; Gloo and MPI (mpirun) run kiln::distributed
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DKILN_WERROR=ON -DKILN_REQUIRE_GLOO=ON -DKILN_BUILD_TESTS=ON -DKILN_BUILD_PERF=ON -DKILN_BUILD_EXAMPLES=ON -DKILN_BUILD_CLI=ON
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"
bash scripts/sanitize.sh address --quick --kernels-of build  # the unit tests again under ASan + UBSan (build-asan), on the kernels compiled above
