#!/usr/bin/env python3
"""Shows that the layering check fails on each kind of crossing it must catch: copies the
sources to a scratch tree, checks that the copy passes, then plants one bad include at a time
and checks that the check fails naming the file and the rule. Usage: check_layering_test.py ROOT
"""
import os
import shutil
import subprocess
import sys
import tempfile

# (file to change, line to add, text the report must contain)
CASES = [
    ("rma/window/window.cpp", '#include "context/context.hpp"', "is not a header of the rma layer"),
    ("pgas/comm/atomic.cpp", '#include "transport/router.hpp"', "is not a header of the pgas layer"),
    ("pgas/comm/atomic.cpp", '#include "runtime/router.hpp"', "another layer's internals"),
    ("rma/window/window.cpp", '#include "pgas/free_list.hpp"', "the interface of a layer above"),
    ("runtime/context/context.cpp", '#include "rma/access.hpp"', "the interface of a layer above"),
    ("runtime/context/context.cpp", "#include <oneside/rma/window.hpp>", "a layer above its own"),
    ("runtime/interface/runtime/layers.hpp", '#include "context/context.hpp"',
     "the interface header includes"),
    ("rma/interface/rma/access.hpp", '#include "window/window_impl.hpp"',
     "the interface header includes"),
    ("runtime/transport/shm/shm_transport.cpp", '#include "transport/mpi/mpi_transport.hpp"',
     "the shm backend includes the mpi backend"),
    ("runtime/transport/mpi/mpi_transport.cpp", '#include "transport/shm/shm_transport.hpp"',
     "the mpi backend includes the shm backend"),
    ("apps/ring/ring.cpp", '#include "runtime/transport.hpp"', "an application includes"),
    ("apps/ring/ring.cpp", '#include "../../runtime/router.hpp"', "an application includes"),
    ("apps/ring/ring.cpp", '#include "common/no_such_file.hpp"', "an application includes"),
    ("apps/ring/ring.cpp", '#include "common/../../runtime/router.hpp"',
     "an application includes"),
    ("pgas/comm/atomic.cpp", '#include "../../runtime/transport/router.hpp"', "climbs out"),
    ("bench/micro/rma_bench.cpp", '#include "transport/router.hpp"', "a bench includes"),
    ("include/oneside/pgas/atomic.hpp", '#include "runtime/transport.hpp"',
     "a public header includes"),
    ("include/oneside/rma/window.hpp", "#include <oneside/runtime/transport.hpp>",
     "is not a public header"),
    ("include/oneside/rma/window.hpp", "#include <tbb/task_arena.h>", "third-party"),
    ("rma/window/window.cpp", "#if ONESIDE_HAVE_MPI\n#endif", "tests ONESIDE_HAVE_MPI"),
    ("pgas/comm/atomic.cpp", "#include <hwloc.h>", "hwloc outside"),
    ("rma/window/window.cpp", 'static const char* e = std::getenv("X");', "reads the environment"),
]


def run(script, tree):
    p = subprocess.run([sys.executable, script, tree], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    root = os.path.abspath(sys.argv[1])
    script = os.path.join(root, "scripts", "check_layering.py")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="oneside-layering-") as tmp:
        for d in ("runtime", "rma", "pgas", "include", "apps", "bench"):
            shutil.copytree(os.path.join(root, d), os.path.join(tmp, d),
                            ignore=shutil.ignore_patterns("build*", "*.o"))
        rc, out = run(script, tmp)
        if rc != 0:
            print("the unchanged sources fail the check:\n" + out)
            return 1
        for path, line, expected in CASES:
            full = os.path.join(tmp, path)
            with open(full, encoding="utf-8") as f:
                original = f.read()
            with open(full, "w", encoding="utf-8") as f:
                f.write(original + "\n" + line + "\n")
            rc, out = run(script, tmp)
            with open(full, "w", encoding="utf-8") as f:
                f.write(original)
            if rc == 0 or expected not in out or path not in out:
                failed += 1
                print(f"FAIL: {path} + {line!r}: expected exit 1 and {expected!r}, got {rc}:\n{out}")
            else:
                print(f"ok: {path} + {line!r} -> {out.strip().splitlines()[0]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
