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
existing=()
for f in "${files[@]}"; do
  [ -f "$f" ] && existing+=("$f")
done
files=("${existing[@]}")
# Batches of files per clang-format process, two at a time (one process per file cost most
# of this check's time).
if [ "$fix" -eq 1 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 64 -P 2 "$cf" -i
  bad=()
else
  mapfile -t bad < <(printf '%s\0' "${files[@]}" |
                     xargs -0 -n 64 -P 2 "$cf" --dry-run --Werror 2>&1 |
                     sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error:.*/\1/p' | sort -u || true)
fi
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format: not formatted (run scripts/check_format.sh --fix):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: ${#files[@]} files ok"
