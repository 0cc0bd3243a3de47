#!/usr/bin/env bash
# The layering check (STYLE.md R1, R2): see check_layering.py for the rules it enforces.
# Usage: scripts/check_layering.sh [source-dir]
set -euo pipefail
exec python3 "$(dirname "$0")/check_layering.py" "$@"
