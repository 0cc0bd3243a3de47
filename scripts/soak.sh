#!/usr/bin/env bash
# The long soak (issue 18): a workload that a long-running program repeats, run under
# oneside-run for as long as asked, printing the largest resident set over the ranks as it
# goes (tests/soak/soak_main.cpp; the short version runs in CI as soak.rss.np4.shm).
#
# Usage: scripts/soak.sh [--build-dir DIR] [--ranks N] [mixed] [--seconds S] [--every S]
#        scripts/soak.sh [--build-dir DIR] [--ranks N] windows|splits|reopen [--count N] [--every N]
#
#   mixed    mixed traffic with window churn (default: 60 s, a line every 5 s)
#   windows  windows of every flavour made and freed (default: 10,000)
#   splits   splits of the world, each team used once (default: 5,000)
#   reopen   the runtime opened and closed (default: 200)
# Ranks: 4 unless --ranks says. The build directory defaults to build/work, then
# build/release; it needs the targets oneside-run and oneside_soak. Exit status:
# oneside_soak's (1 when a value read back was wrong).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=
ranks=4
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ -z "$build" ]; then
  for b in "$top/build/work" "$top/build/release"; do
    if [ -x "$b/bin/oneside_soak" ]; then build=$b; break; fi
  done
fi
if [ -z "$build" ] || [ ! -x "$build/bin/oneside_soak" ] || [ ! -x "$build/bin/oneside-run" ]; then
  echo "soak: no oneside_soak and oneside-run in ${build:-build/work or build/release}" \
       "(cmake --build <dir> --target oneside_soak oneside-run)" >&2
  exit 2
fi
exec "$build/bin/oneside-run" -n "$ranks" "$build/bin/oneside_soak" "${args[@]}"
