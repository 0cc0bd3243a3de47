#!/usr/bin/env python3
"""Overlap efficiency of the stencil's tasks variant (issue 19).

E = (T_compute_only + T_comm_only) / T_overlapped, from `stencil --variant tasks` run whole,
with `--only compute` and with `--only comm` (the same grid, iterations and ranks), launched
interleaved (whole, compute, comm, whole, ...) so that the machine's load hits all three alike.
2.0 is perfect overlap, 1.0 none. Per round E uses that round's three times; the summary is the
median over rounds, with the spread.

  bench/run_overlap.py --bindir build/release/bin --transport shm-remote --n 1000
  bench/run_overlap.py --bindir build/release/bin --transport mpi --n 1000

Transports: shm-remote (oneside-run, ONESIDE_SHM_LOAD_STORE=0: every halo through the
transport), shm (load/store between ranks), mpi (mpirun over TCP, ONESIDE_TRANSPORT=mpi, the
flags the tests use).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

MPI_FLAGS = ("--oversubscribe --bind-to none --mca btl self,tcp --mca osc ucx -x UCX_TLS=tcp,self "
             "-x ONESIDE_TRANSPORT")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bindir", default="build/release/bin")
    p.add_argument("--transport", choices=["shm", "shm-remote", "mpi"], default="shm-remote")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--radius", type=int, default=2)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--timeout", type=int, default=300)
    return p.parse_args()


def command(a: argparse.Namespace, only: str) -> tuple[list[str], dict[str, str]]:
    bindir = Path(a.bindir)
    app = [str(bindir / "stencil"), "--n", str(a.n), "--radius", str(a.radius), "--iterations",
           str(a.iterations), "--variant", "tasks"] + (["--only", only] if only else [])
    env = dict(os.environ)
    if a.transport == "mpi":
        env.update(ONESIDE_TRANSPORT="mpi", OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        return ["mpirun", "-n", str(a.ranks), *MPI_FLAGS.split(), *app], env
    env["ONESIDE_TRANSPORT"] = "shm"
    if a.transport == "shm-remote":
        env["ONESIDE_SHM_LOAD_STORE"] = "0"
    return [str(bindir / "oneside-run"), "-n", str(a.ranks), *app], env


def avg_time(a: argparse.Namespace, only: str) -> float:
    cmd, env = command(a, only)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=a.timeout)
    if out.returncode != 0:
        sys.exit(f"failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}{out.stderr}")
    if not only and "Solution validates" not in out.stdout:
        sys.exit(f"did not validate: {' '.join(cmd)}\n{out.stdout}")
    m = re.search(r"Avg time \(s\):\s*([0-9.eE+-]+)", out.stdout)
    if not m:
        sys.exit(f"no time in the output of {' '.join(cmd)}\n{out.stdout}")
    return float(m.group(1))


def main() -> None:
    a = parse_args()
    rows = []
    for r in range(a.rounds):
        whole = avg_time(a, "")
        compute = avg_time(a, "compute")
        comm = avg_time(a, "comm")
        e = (compute + comm) / whole
        rows.append((whole, compute, comm, e))
        print(f"round {r + 1}: overlapped {whole * 1e3:.3f} ms, compute {compute * 1e3:.3f} ms, "
              f"comm {comm * 1e3:.3f} ms, E = {e:.2f}", flush=True)
    med = [statistics.median(x[i] for x in rows) for i in range(4)]
    es = [x[3] for x in rows]
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"{a.transport}, {a.ranks} ranks, n {a.n}, R {a.radius}, {a.iterations} iterations, "
          f"{a.rounds} rounds (load average {load}): median overlapped {med[0] * 1e3:.3f} ms, "
          f"compute {med[1] * 1e3:.3f} ms, comm {med[2] * 1e3:.3f} ms; "
          f"E median {med[3]:.2f} (min {min(es):.2f}, max {max(es):.2f})")


if __name__ == "__main__":
    main()
