#!/usr/bin/env bash
# Installs every Debian package oneside builds, tests and benchmarks with.
# Idempotent and non-interactive: packages already present are left alone, and
# apt-get runs only when something is missing (after `apt-get update`).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libtbb-dev            # per-rank task arenas (runtime/task)
  libhwloc-dev          # topology and binding (runtime/topology, launcher)
  libboost-context-dev  # fibers (runtime/fiber)
  liburing-dev          # optional: the file I/O thread's io_uring engine (runtime/io)
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev      # bench/
  libopenmpi-dev openmpi-bin  # MPI transport and the MPI peer baselines in bench/peers
  clang-format-14       # scripts/check_format.sh
  python3               # bench/run.py, scripts/conformance_table.py (style.conformance_table)
  python3-matplotlib    # bench/oneside-bench report's plots (/usr/bin/python3)
  hwloc                 # lstopo-no-graphics: the topology in oneside-bench's records
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
