#!/usr/bin/env python3
"""Runs the transpose mini-app against its MPI1 peer, interleaved, and prints the ratio.

PRK Transpose (`transpose <iterations> <order> <tile>`): oneside's apps/transpose under
oneside-run on the shm transport, and bench/peers/mpi_transpose (PRK's MPI1 way: Irecv, pack
the transposed block, Isend, add) under Open MPI's mpirun on the vader shared-memory BTL (ob1,
single copy by CMA). Launches alternate -- oneside, MPI, MPI, oneside, ... (the first of each
round alternates) -- so both see the same machine state; each run's "Rate (MB/s)" line is
collected, and the report gives each side's median, min-max spread, the ratio of the medians
and the range of the per-round ratios, with the load average before and after.

Standard library only; needs a build directory holding transpose, mpi_transpose and
oneside-run:

    bench/run_transpose.py --build-dir build/release [--runs 5] [--ranks 2] \
        [--iterations 20] [--order 4096] [--tile 32] [--variant direct] \
        [--kernel buffered|prk] [--peer-kernel buffered|prk]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from oneside_bench.util import load_average

RATE = re.compile(r"Rate \(MB/s\): ([0-9.]+)")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", required=True, type=Path)
    p.add_argument("--runs", type=int, default=5, help="launches of each program (default 5)")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--order", type=int, default=4096)
    p.add_argument("--tile", type=int, default=32)
    p.add_argument("--variant", default="direct", help="the oneside app's --variant")
    p.add_argument("--kernel", default="buffered", choices=("buffered", "prk"),
                   help="the oneside app's --kernel (default buffered)")
    p.add_argument("--peer-kernel", default="buffered", choices=("buffered", "prk"),
                   help="the MPI peer's --kernel (default buffered; prk: PRK's loop nest)")
    p.add_argument("--mpirun", default="mpirun")
    p.add_argument("--mpi-flags", default="--bind-to core --mca pml ob1 --mca btl self,vader",
                   help="flags of the MPI peer's mpirun (default: %(default)s)")
    p.add_argument("--timeout", type=int, default=600, help="seconds per launch")
    return p.parse_args()


def run(cmd: list[str], env: dict[str, str], timeout: int) -> float:
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    m = RATE.search(out.stdout)
    if out.returncode != 0 or m is None or "Solution validates" not in out.stdout:
        sys.stderr.write(f"run_transpose: {' '.join(cmd)} failed (status {out.returncode}):\n"
                         f"{out.stdout}{out.stderr}")
        sys.exit(1)
    return float(m.group(1))


def main() -> None:
    a = parse_args()
    bindir = a.build_dir / "bin"
    for prog in ("oneside-run", "transpose", "mpi_transpose"):
        if not (bindir / prog).exists():
            sys.exit(f"run_transpose: {bindir / prog} is missing (build it first)")
    args = [str(a.iterations), str(a.order), str(a.tile)]
    ours = [str(bindir / "oneside-run"), "-n", str(a.ranks), "--bind-to", "core",
            str(bindir / "transpose"), *args, "--variant", a.variant, "--kernel", a.kernel]
    peer = [a.mpirun, "-n", str(a.ranks), *a.mpi_flags.split(), str(bindir / "mpi_transpose"),
            *args, "--kernel", a.peer_kernel]
    env = dict(os.environ, ONESIDE_TRANSPORT="shm", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    print(f"transpose {' '.join(args)}, {a.ranks} ranks, {a.runs} interleaved launches each, "
          f"load average {load_average()}")
    print(f"  oneside: {' '.join(ours)}")
    print(f"  MPI1:    {' '.join(peer)}")
    rates: dict[str, list[float]] = {"oneside": [], "mpi": []}
    for r in range(a.runs):
        order = [("oneside", ours), ("mpi", peer)]
        if r % 2 == 1:
            order.reverse()
        for name, cmd in order:
            rates[name].append(run(cmd, env, a.timeout))
        print(f"  round {r + 1}: oneside {rates['oneside'][-1]:9.1f} MB/s   "
              f"MPI1 {rates['mpi'][-1]:9.1f} MB/s   "
              f"ratio {rates['oneside'][-1] / rates['mpi'][-1]:.2f}x", flush=True)
    med = {k: statistics.median(v) for k, v in rates.items()}
    per_round = [o / m for o, m in zip(rates["oneside"], rates["mpi"])]
    print(f"median: oneside {med['oneside']:.1f} MB/s "
          f"({min(rates['oneside']):.1f}-{max(rates['oneside']):.1f}), "
          f"MPI1 {med['mpi']:.1f} MB/s ({min(rates['mpi']):.1f}-{max(rates['mpi']):.1f})")
    print(f"ratio of medians: {med['oneside'] / med['mpi']:.2f}x "
          f"(per round {min(per_round):.2f}-{max(per_round):.2f}x, "
          f"median {statistics.median(per_round):.2f}x); load average now {load_average()}")


if __name__ == "__main__":
    main()
