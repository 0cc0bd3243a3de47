#!/usr/bin/env bash
# Fails when a C++ file of the project is not formatted with the repository's .clang-format
# (clang-format-14). Usage: scripts/check_format.sh [source-dir] ; add --fix to reformat.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
fix=0
for a in "$@"; do
  case "$a" in
    --fix) fix=1 ;;
    *) top=$a ;;
  esac
done
cd "$top"
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then
  echo "check_format: clang-format-14 is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files -co --exclude-standard -- '*.hpp' '*.cpp' '*.h' 2>/dev/null |
                     grep -v '^build/' || true)
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(find include runtime rma pgas apps bench tests -name '*.[ch]pp' -o -name '*.h')
fi
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if [ "$fix" -eq 1 ]; then
    "$cf" -i "$f"
  elif ! "$cf" --dry-run --Werror "$f" >/dev/null 2>&1; then
    bad+=("$f")
  fi
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format: not formatted (run scripts/check_format.sh --fix):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: ${#files[@]} files ok"
