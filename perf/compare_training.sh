#!/usr/bin/env bash
# Seconds per epoch of the Fashion-MNIST loop (perf/train_fashion.cpp) for kiln and libtorch, in
# one run, each at 1 and 2 threads. Usage: perf/compare_training.sh BUILD_DIR [epochs]
# (BUILD_DIR configured with -DKILN_BUILD_PERF=ON where libtorch-dev is installed; kiln's kernel
# cache should be warm: the first run of each model fills it and is not reported).
set -euo pipefail
build=${1:?build dir}
epochs=${2:-1}
last() { tail -1 | awk '{print $4 " s (accuracy " $2 ")"}'; }
echo "| model | kiln 1 thread | kiln 2 threads | libtorch 1 thread | libtorch 2 threads | libtorch 1 intra-op thread, OpenBLAS default |"
echo "| --- | --- | --- | --- | --- | --- |"
for model in mlp cnn; do
  "$build/perf/train_fashion" "$model" 1 > /dev/null  # warm the kernel cache
  k1=$(KILN_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$build/perf/train_fashion" "$model" "$epochs" | last)
  k2=$(KILN_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 "$build/perf/train_fashion" "$model" "$epochs" | last)
  t1=$(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$build/perf/train_fashion_libtorch" "$model" "$epochs" | last)
  t2=$(OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 "$build/perf/train_fashion_libtorch" "$model" "$epochs" | last)
  t3=$(OMP_NUM_THREADS=1 "$build/perf/train_fashion_libtorch" "$model" "$epochs" | last)
  echo "| $model | $k1 | $k2 | $t1 | $t2 | $t3 |"
done
