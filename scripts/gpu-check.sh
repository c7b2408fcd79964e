#!/usr/bin/env bash
# kiln's checks on a GPU machine (issue 32, "On a GPU"). Such a machine (an H100 or H200 with the
# CUDA 13 driver and PyTorch) has none of Debian's packages, so the binaries are built on a
# development machine and travel with the shared libraries they need:
#
#   scripts/gpu-check.sh pack [BUILD_DIR] [PACK]   here: BUILD_DIR's kiln_tests and kiln, and the
#                                                  libraries ldd names (not glibc's), into PACK
#                                                  (default .gpu/kiln-gpu.tar.xz, under 64 MiB)
#   scripts/gpu-check.sh run [PACK]                there: unpacks PACK and runs every check below,
#                                                  printing PASS, FAIL or NOT YET for each; exits 1
#                                                  if one failed. With $OUT set, the log goes there.
#
# .gpu/ is ignored by git: name it in the device tool's `carry`, and run
# `bash scripts/gpu-check.sh run` there.
#
# CPU work there runs on the interpreter (KILN_BACKEND=interp): Halide and LLVM (over 100 MiB) do
# not travel. Checks that need what kiln does not have yet are listed as NOT YET with what is
# missing, so the same script serves once it is there.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LIMIT=$((64 << 20))

pack() {
  local build=${1:-$ROOT/build} out=${2:-$ROOT/.gpu/kiln-gpu.tar.xz}
  local stage
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib" "$(dirname "$out")"
  for b in tests/kiln_tests cli/kiln; do
    [[ -x $build/$b ]] || { echo "missing $build/$b: build it first" >&2; exit 1; }
    cp "$build/$b" "$stage/bin/"
  done
  # glibc (and its loader) stay: the GPU machine's own is newer than Debian 12's 2.36.
  ldd "$stage"/bin/* | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
  cp "$ROOT/perf/bench_pytorch.py" "$stage/bin/"  # the PyTorch side of `kiln bench --device cuda`
  # The per-op CUDA kernels built with kiln (sm_80, sm_90), where kiln looks beside bin/.
  if compgen -G "$build/cuda-per-op/*.cubin" >/dev/null; then
    mkdir -p "$stage/lib/kiln/cuda" && cp "$build"/cuda-per-op/*.cubin "$stage/lib/kiln/cuda/"
  fi
  # Fashion-MNIST for `kiln train`, once it takes --device.
  if "$stage/bin/kiln" train --help 2>/dev/null | grep -q -- '--device'; then
    mkdir -p "$stage/data" && cp /usr/share/datasets/fashion-mnist/*.gz "$stage/data/"
  fi
  tar -C "$stage" -cJf "$out" .
  rm -rf "$stage"
  local size
  size=$(stat -c %s "$out")
  echo "packed $out: $((size >> 20)) MiB ($(tar -tJf "$out" | grep -c '^./lib/.') libraries)"
  ((size < LIMIT)) || { echo "over 64 MiB: it will not travel" >&2; exit 1; }
}

declare -a SUMMARY
FAILED=0
check() {  # check NAME COMMAND...: runs it, records PASS or FAIL
  local name=$1
  shift
  echo "=== $name: $*"
  if "$@"; then SUMMARY+=("PASS     $name"); else SUMMARY+=("FAIL     $name"); FAILED=1; fi
}
not_yet() { SUMMARY+=("NOT YET  $1: $2"); }

run() {
  local pack=${1:-$ROOT/.gpu/kiln-gpu.tar.xz}
  local dir=/tmp/kiln-gpu
  rm -rf "$dir" && mkdir -p "$dir" && tar -C "$dir" -xJf "$pack" || exit 1
  # Ours first; then the toolkit's (libnvrtc.so.13 for the CUDA code generator) if it is there.
  export LD_LIBRARY_PATH=$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:/usr/local/cuda/lib64
  export KILN_CACHE_DIR=$dir/cache KILN_BACKEND=interp
  local kiln=$dir/bin/kiln tests=$dir/bin/kiln_tests

  command -v nvidia-smi >/dev/null && nvidia-smi -L
  check "kiln info" "$kiln" info
  # (FakeCuda.* and FakeCudaBackend.* compile kernels for the host: CI's work, not this machine's.)
  check "driver, allocators, devices (CudaDevice.*)" "$tests" --gtest_filter='CudaDevice.*'
  if ! "$kiln" info | grep -q "cuda:0"; then
    SUMMARY+=("FAIL     kiln info names no GPU: the rest needs one")
    FAILED=1
    finish
    return
  fi
  if "$tests" --gtest_list_tests --gtest_filter='Cuda.*' | grep -q '^  '; then
    check "CUDA code generation (Cuda.*)" "$tests" --gtest_filter='Cuda.*'
  else
    not_yet "CUDA code generation" "no Cuda.* tests in this build (codegen/cuda)"
  fi
  # Tensors computed on the GPU: the CUDA backend (codegen/cuda/launcher.h) against the
  # interpreter, then the device tests (FakeCuda.* ran above on the fake driver), then training.
  check "random programs on CUDA against the interpreter (forward and backward)" env KILN_GPU_PROGRAMS="${KILN_GPU_PROGRAMS:-300}" \
    "$tests" --gtest_filter='CudaGpu.*:-CudaGpu.SortsAndScans*:CudaGpu.OpsMixing*:CudaGpu.PerOp*:CudaGpu.FusedLaunches*:CudaGpu.Graphs*'
  # The issue's target: at most 5 us of host time per launched kernel in an MLP step's steady
  # state; the [host time] line splits it into tracing, planning and the launcher.
  check "host time per launched kernel, at most 5 us (CudaGpu.FusedLaunchesTakeLittleHostTime)" \
    "$tests" --gtest_filter='CudaGpu.FusedLaunchesTakeLittleHostTime'
  # CUDA graphs (codegen/cuda/graphs.h): the host's time per training step with graphs and without
  # (KILN_CUDA_GRAPHS=0), interleaved; the [graphs] lines give both.
  check "host time per step with CUDA graphs below without (CudaGpu.GraphsTakeLessHostTimePerStep)" \
    "$tests" --gtest_filter='CudaGpu.GraphsTakeLessHostTimePerStep'
  check "ops mixing CPU and CUDA tensors throw; composites' fills on the device (CudaGpu.OpsMixing*)" \
    "$tests" --gtest_filter='CudaGpu.OpsMixing*'
  check "sorts, topk, median, mode, searchsorted and block scans as device kernels (CudaGpu.SortsAndScans*)" \
    "$tests" --gtest_filter='CudaGpu.SortsAndScans*'
  # Per-op kernels (codegen/cuda/per_op.h): their values against the fused kernels' on the device,
  # and the first MLP step from an empty cache, while kernels compile (background) and waiting
  # for them (wait), then from the warm cache: the [cuda] lines give each step's milliseconds.
  local compile
  for compile in background wait; do
    rm -rf "$dir/cache-$compile"
    check "per-op kernels equal the fused ones; first MLP step, empty cache, KILN_COMPILE=$compile (CudaGpu.PerOp*)" \
      env KILN_COMPILE=$compile KILN_CACHE_DIR="$dir/cache-$compile" "$tests" --gtest_filter='CudaGpu.PerOp*'
  done
  check "first MLP step, warm cache (CudaGpu.PerOp*)" env KILN_COMPILE=background KILN_CACHE_DIR="$dir/cache-wait" \
    "$tests" --gtest_filter='CudaGpu.PerOp*'
  if ls "$dir"/lib/kiln/cuda/*.cubin >/dev/null 2>&1; then
    SUMMARY+=("NOTE     per-op kernels prebuilt: $(cd "$dir/lib/kiln/cuda" && ls *.cubin | tr '\n' ' ')")
  else
    SUMMARY+=("NOTE     no prebuilt per-op kernels in the pack: NVRTC compiled them at first use")
  fi
  check "kiln train --device cuda --epochs 1" "$kiln" train --device cuda --epochs 1 --data "$dir/data"
  check "kiln train --device cuda (second run: kernels from the disk cache)" "$kiln" train --device cuda --epochs 1 \
    --data "$dir/data"
  nccl_step
  check "kiln bench --device cuda" "$kiln" bench --device cuda --min-time 0.2 --json "${OUT:-$dir}/bench-cuda.json"
  if python3 -c 'import torch' 2>/dev/null; then
    check "the same workloads in PyTorch eager and torch.compile (perf/bench_pytorch.py)" \
      python3 "$dir/bin/bench_pytorch.py" --device cuda --min-time 0.2 --json "${OUT:-$dir}/bench-pytorch.json"
  else
    not_yet "kiln bench --device cuda against PyTorch eager and torch.compile" "no PyTorch on this machine"
  fi
  echo "=== record: the two 'accuracy ... seconds_per_epoch ...' lines above (cold and warm cache),"
  echo "    the [cuda] lines of CudaGpu.RandomProgramsMatchTheInterpreter and CudaGpu.PerOp* (first step cold"
  echo "    with per-op kernels, cold waiting for NVRTC, warm), the bench table (device copy"
  echo "    GB/s, each row's ms and share of floor), PyTorch's eager and compile lines beside it, and the"
  echo "    summary below, the [host time] line (us per launch: tracing, planning, launcher) and the"
  echo "    [graphs] lines (us of host time per step with CUDA graphs and without)"

  finish
}

# NCCL (issue 34): libnccl.so.2 (over 200 MiB, so it does not travel) from the toolkit, the
# system, or PyTorch's nvidia-nccl wheel; then a job of one rank (NCCL takes one GPU per rank).
nccl_step() {
  local lib
  lib=$( (ls /usr/local/cuda/lib64/libnccl.so.2; ldconfig -p | awk '/libnccl.so.2 /{print $NF}';
          python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))'
        ) 2>/dev/null | head -n 1)
  if [[ -z $lib || ! -e $lib ]]; then
    not_yet "NCCL collectives and DDP on the GPU (NcclGpu.*)" "no libnccl.so.2 on this machine"
    return
  fi
  check "NCCL collectives and DDP on the GPU (NcclGpu.*, $lib)" env LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$lib")" \
    "$dir/bin/kiln_tests" --gtest_filter='NcclGpu.*:Distributed.Nccl*'
  not_yet "NCCL across ranks" "needs a machine with two GPUs: kiln launch --nproc-per-node 2 over nccl"
}

finish() {
  echo "=== summary"
  printf '%s\n' "${SUMMARY[@]}"
  return $FAILED
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  run)
    shift
    if [[ -n ${OUT:-} ]]; then run "$@" 2>&1 | tee "$OUT/gpu-check.log"; else run "$@"; fi
    ;;
  *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
