#!/usr/bin/env bash
# scripts/check_format.sh [--fix]: every tracked C++ and CUDA source formatted as .clang-format
# says (clang-format --dry-run --Werror); --fix rewrites them in place. Fails naming the files
# that differ; warns and passes without clang-format.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if ! command -v clang-format >/dev/null; then
  echo "tessera: WARNING: no clang-format: the format check is skipped (apt-get install clang-format)"
  exit 0
fi
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' 2>/dev/null)
[ ${#files[@]} -gt 0 ] || { echo "tessera: no sources to check (not a git checkout?)"; exit 0; }
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf '  %s\n' "${bad[@]}"
  echo "tessera: ${#bad[@]} file(s) above are not formatted as .clang-format says: scripts/check_format.sh --fix"
  exit 1
fi
echo "tessera: ${#files[@]} sources formatted as .clang-format says"
