#!/usr/bin/env bash
# Fails on an #include that points up the pipeline (DESIGN.md: runtime <- tracer <- fusion <-
# codegen <- frontend, each a library linking only those below it), and on Halide's headers
# outside codegen/halide. Within codegen the libraries stack too: the interpreter and BLAS
# (codegen/*), the Halide and CUDA backends (codegen/halide/, codegen/cuda/), the flush driver (codegen/flush.*).
set -euo pipefail
cd "$(dirname "$0")/.."

# The level of a file or included path, by its folder; nothing for a path outside the stages.
level() {
  case "$1" in
    runtime/*) echo 0 ;;
    tracer/*) echo 1 ;;
    fusion/*) echo 2 ;;
    codegen/flush.*) echo 5 ;;
    codegen/halide/*) echo 4 ;;
    codegen/cuda/*) echo 4 ;;
    codegen/*) echo 3 ;;
    frontend/*) echo 6 ;;
    include/*) echo 7 ;;
  esac
}

failures=0
while IFS= read -r file; do
  from=$(level "$file")
  while IFS=: read -r line target; do
    to=$(level "$target")
    if [[ -n "$to" && "$to" -gt "$from" ]]; then
      echo "$file:$line: includes $target, above it in the pipeline"
      failures=$((failures + 1))
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" | sed -E 's/^([0-9]+):.*"([^"]+)".*/\1:\2/')
  if [[ "$file" != codegen/halide/* ]] && grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]Halide(Runtime)?\.h' "$file"; then
    echo "$file: includes Halide's headers outside codegen/halide"
    failures=$((failures + 1))
  fi
done < <(find runtime tracer fusion codegen frontend include -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.def' \) | sort)

if ((failures)); then
  echo "$failures include(s) point the wrong way"
  exit 1
fi
echo "includes point down the pipeline"
