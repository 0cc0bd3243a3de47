#!/usr/bin/env python3
"""Runs the pointer chase (apps/chase) and writes the ratio report of issue 19's chase targets.

For each setting -- the MPI transport under mpirun (ONESIDE_TRANSPORT=mpi: every peer through
MPI over TCP, osc/ucx, as the tests run it) and shm under oneside-run -- every fiber count
(0 = the plain loop, then 1, 16, 256, 4096 fibers per rank) is launched once per repetition,
the fiber counts taking turns in a rotated order from one repetition to the next, so that each
repetition's launches see the same machine state. A launch's figure is the total rate over its
ranks (hops per second, summed); the report gives each count's median and range over the
repetitions, and ratios as the median of per-repetition ratios (with their range):

  MPI:  256 fibers / 1 fiber   (target >= 20x)
  shm:  every fiber count / the plain loop (target: never below 1x)

Standard library only:

    bench/chase.py --build-dir build/release [--repetitions 5] [--out DIR]
        [--mpi-ranks 2] [--shm-ranks 2 4] [--prefetch]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

FIBERS = [0, 1, 16, 256, 4096]
MPI_FLAGS = ["--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,tcp", "--mca", "osc",
             "ucx", "-x", "UCX_TLS=tcp,self", "-x", "ONESIDE_TRANSPORT"]
RATE = re.compile(r"^Rate \(hops/s\): (\d+) total", re.M)


def launch(cmd: list[str], env: dict[str, str], timeout: int) -> float:
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    m = RATE.search(out.stdout)
    if out.returncode != 0 or "Solution validates" not in out.stdout or m is None:
        sys.exit(f"chase failed ({out.returncode}): {' '.join(cmd)}\n{out.stdout}\n{out.stderr}")
    return float(m.group(1))


def spread(values: list[float]) -> str:
    return f"{min(values):.3g}-{max(values):.3g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build-dir", default="build/release")
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--mpi-ranks", type=int, nargs="*", default=[2])
    ap.add_argument("--shm-ranks", type=int, nargs="*", default=[2, 4])
    ap.add_argument("--nodes-per-rank", type=int, default=1_000_000)
    ap.add_argument("--mpi-hops", type=int, default=200_000, help="hops per rank over MPI")
    ap.add_argument("--shm-hops", type=int, default=4_000_000, help="hops per rank on shm")
    ap.add_argument("--prefetch", action="store_true",
                    help="also run the shm fiber counts with --prefetch (prefetch and yield)")
    ap.add_argument("--out", default=None, help="directory for report.md")
    args = ap.parse_args()

    bindir = Path(args.build_dir) / "bin"
    chase, runner = str(bindir / "chase"), str(bindir / "oneside-run")
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

    # setting name -> (command prefix, environment, hops, fiber counts with their extra flags)
    settings = []
    for np in args.mpi_ranks:
        settings.append((f"MPI transport, {np} ranks",
                         ["mpirun", *MPI_FLAGS, "-n", str(np)], {**env, "ONESIDE_TRANSPORT": "mpi"},
                         args.mpi_hops, [(f, []) for f in FIBERS]))
    for np in args.shm_ranks:
        runs = [(f, []) for f in FIBERS]
        if args.prefetch:
            runs += [(f, ["--prefetch"]) for f in FIBERS if f > 0]
        settings.append((f"shm, {np} ranks", [runner, "-n", str(np), "--timeout", "600"],
                         {**env, "ONESIDE_TRANSPORT": "shm"}, args.shm_hops, runs))

    lines = ["# Pointer chase (apps/chase)", "",
             f"{args.repetitions} repetitions, fiber counts interleaved (rotated order); "
             f"{args.nodes_per_rank} nodes per rank; rates are total hops/s over the ranks "
             "(median, range).", ""]
    for name, prefix, senv, hops, runs in settings:
        rates: dict[str, list[float]] = {}
        labels = [(f"{f}" + (" prefetch" if extra else ""), f, extra) for f, extra in runs]
        for rep in range(args.repetitions):
            k = rep % len(labels)
            for label, f, extra in labels[k:] + labels[:k]:
                cmd = [*prefix, chase, "--nodes-per-rank", str(args.nodes_per_rank),
                       "--hops", str(hops), "--fibers", str(f), *extra]
                rate = launch(cmd, senv, 900)
                rates.setdefault(label, []).append(rate)
                print(f"{name}: fibers {label}: {rate:.0f} hops/s", flush=True)
        lines += [f"## {name}", "", "| fibers per rank | hops/s (median) | range | "
                  "vs plain loop (median of per-repetition ratios, range) | vs 1 fiber |",
                  "|---|---:|---:|---:|---:|"]
        for label, _, _ in labels:
            r = rates[label]
            vs0 = [a / b for a, b in zip(r, rates["0"])]
            vs1 = [a / b for a, b in zip(r, rates["1"])]
            lines.append(f"| {'plain loop' if label == '0' else label} | "
                         f"{statistics.median(r):.4g} | {spread(r)} | "
                         f"{statistics.median(vs0):.2f}x ({spread(vs0)}) | "
                         f"{statistics.median(vs1):.2f}x ({spread(vs1)}) |")
        lines.append("")
    report = "\n".join(lines)
    print(report)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "report.md").write_text(report + "\n")


if __name__ == "__main__":
    main()
