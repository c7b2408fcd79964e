#!/usr/bin/env bash
# Seconds per epoch of the libtorch example programs, kiln and libtorch side by side, in
# alternating rounds (perf/RESULTS.md): mnist_cnn (one epoch of Fashion-MNIST), dcgan (100
# batches), char_lstm (one epoch of the GPL, 64-character windows). kiln runs with a warm kernel
# cache (a first run fills it); libtorch at 1 and at 2 threads. Needs a build with libtorch-dev
# installed (the <example>_libtorch programs) and Fashion-MNIST uncompressed in RAW (libtorch's
# MNIST reads raw files only).
#   scripts/time_examples.sh [ROUNDS] [RAW]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
raw=${2:-/tmp/fashion-mnist-raw}
fashion=/usr/share/datasets/fashion-mnist
if [ ! -f "$raw/t10k-labels-idx1-ubyte" ]; then
  mkdir -p "$raw"
  for f in "$fashion"/*.gz; do zcat "$f" > "$raw/$(basename "$f" .gz)"; done
fi
ck=$(mktemp -d)
trap 'rm -rf "$ck"' EXIT
# Each program prints "epoch N: SECONDS ..." on stderr; the figure is its first epoch.
seconds() { "$@" 2>&1 >/dev/null | awk '/^epoch 1:/ {print $3; exit}'; }
run() {  # side threads program args...
  local side=$1 threads=$2; shift 2
  rm -rf "$ck"/*
  if [ "$side" = kiln ]; then KILN_NUM_THREADS=$threads seconds "$@"; else OMP_NUM_THREADS=$threads seconds "$@"; fi
}
declare -A args=(
  [mnist_cnn]="DATA 1 0 CK"
  [dcgan]="DATA 1 100 100000 CK 0 1000"
  [char_lstm]="/usr/share/common-licenses/GPL-3 1 0 64"
)
for example in mnist_cnn dcgan char_lstm; do
  a=${args[$example]}
  kiln_args=${a//DATA/$fashion}; kiln_args=${kiln_args//CK/$ck}
  torch_args=${a//DATA/$raw}; torch_args=${torch_args//CK/$ck}
  run kiln 2 build/examples/$example $kiln_args > /dev/null  # fills the kernel cache
  for r in $(seq "$rounds"); do
    k=$(run kiln 2 build/examples/$example $kiln_args)
    t1=$(run torch 1 build/examples/${example}_libtorch $torch_args)
    t2=$(run torch 2 build/examples/${example}_libtorch $torch_args)
    echo "$example round $r: kiln $k s, libtorch 1 thread $t1 s, 2 threads $t2 s"
  done
done
