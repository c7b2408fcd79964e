#!/usr/bin/env bash
# Fails when a C++ file kiln tracks differs from what clang-format (Debian's 14, .clang-format)
# makes of it, and names the files. Fix with: git ls-files '*.cpp' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || bash scripts/deps.sh clang-format
unformatted=()
while IFS= read -r file; do
  clang-format --dry-run --Werror "$file" >/dev/null 2>&1 || unformatted+=("$file")
done < <(git ls-files '*.cpp' '*.h' '*.cu' 2>/dev/null || find . -name '*.cpp' -o -name '*.h')
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "not formatted as .clang-format says (clang-format -i FILE):"
  printf '  %s\n' "${unformatted[@]}"
  exit 1
fi
