#!/usr/bin/env bash
# Fails when a layer includes a layer above it (runtime <- rma <- pgas), when a public header
# includes a third-party dependency, when a dependency is used outside its one folder, or when
# an application includes the transport, which is the layers' interface and not for programs
# (STYLE.md R1, R2). Usage: scripts/check_layering.sh [source-dir]
set -euo pipefail
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top"
fail=0
report() { echo "layering: $1"; fail=1; }

grep_src() { grep -rEln "$1" "${@:2}" --include='*.hpp' --include='*.cpp' --include='*.h' 2>/dev/null || true; }

for f in $(grep_src '#include\s*[<"]oneside/(rma|pgas)/' runtime include/oneside/runtime); do
  report "$f: the runtime layer includes rma or pgas"
done
for f in $(grep_src '#include\s*[<"]oneside/pgas/' rma include/oneside/rma); do
  report "$f: the rma layer includes pgas"
done
for f in $(grep_src '#include\s*[<"](mpi\.h|hwloc|tbb/|oneapi/tbb|boost/)' include); do
  report "$f: a public header includes a third-party dependency"
done
# Applications use the public API only: the transport is internal.
for f in $(grep_src '#include\s*[<"]oneside/runtime/transport\.hpp' apps); do
  report "$f: an application includes the transport (use the public API: oneside::wake, rma, pgas)"
done
# Each dependency lives in exactly one folder of runtime/.
for f in $(grep_src '#include\s*[<"]hwloc' runtime rma pgas apps | grep -v '^runtime/topology/'); do
  report "$f: hwloc outside runtime/topology"
done
for f in $(grep_src '#include\s*[<"](tbb/|oneapi/tbb)' runtime rma pgas | grep -v '^runtime/task/'); do
  report "$f: TBB outside runtime/task"
done
for f in $(grep_src '#include\s*[<"]boost/' runtime rma pgas | grep -v '^runtime/fiber/'); do
  report "$f: Boost outside runtime/fiber"
done
for f in $(grep_src '#include\s*[<"]mpi\.h' runtime rma pgas | grep -v '^runtime/transport/mpi/' | grep -v 'bootstrap_mpi'); do
  report "$f: MPI outside runtime/transport/mpi and the MPI bootstrap"
done
# Settings are read in one place only.
for f in $(grep_src '\bgetenv\s*\(' runtime rma pgas | grep -v '^runtime/settings/'); do
  report "$f: reads the environment outside runtime/settings (use the settings registry)"
done
if [ "$fail" -eq 0 ]; then echo "layering: ok"; fi
exit "$fail"
