#!/usr/bin/env python3
"""Runs the GUPS app's variants against its MPI bucket peer, interleaved, and prints the ratios.

HPC Challenge RandomAccess (`gups --log2-table N`), issue 21's targets (2 ranks, 2^26 words):
  shm:  aggregated >= 1.5x the MPI bucket peer
  MPI:  aggregated >= 1.5x the MPI bucket peer, and >= 10x the per-update atomic variant
Two settings:
  shm  apps/gups under oneside-run on the shm transport; bench/peers/mpi_gups under mpirun on
       the vader shared-memory BTL (ob1), both bound to cores;
  mpi  apps/gups under mpirun with ONESIDE_TRANSPORT=mpi on the MPI transport's network path
       (TCP btl, osc/ucx over UCX's TCP, ranks unbound: bench/run.py's --transport mpi), and
       the peer under the same mpirun flags.
The variants are those the gups binary offers (its --help); the ones issue 21 names that it does
not offer yet (aggregated, rpc) are named as missing, and the rows that need them are left out.
Each round launches every (setting, program) once, the order rotated from one round to the
next, so all see the same machine state; a launch's figure is its GUP/s line, and it must
verify (unless --verify off). The report gives each one's median and min-max spread, and each
ratio as the ratio of the medians with the range and median of the per-round ratios, with the
load average before and after.

The per-update variants (atomic, rpc) on the MPI transport send a message over TCP per update
(a few microseconds each): at 2^26 words one launch would take most of an hour, so they run on
a table of 2^--per-update-mpi-log2-table words (default 20); GUP/s is a rate, so their ratios
stand.

Standard library only; needs a build directory holding gups, mpi_gups and oneside-run:

    bench/run_gups.py --build-dir build/release [--runs 9] [--ranks 2] [--log2-table 26] \
        [--settings shm mpi] [--per-update-mpi-log2-table 20] [--verify on|off]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from oneside_bench.util import load_average

RATE = re.compile(r"([0-9.]+) Billion\(10\^9\) Updates\s+per second \[GUP/s\]")
VARIANTS = re.compile(r"--variant V\s+(.+?) \(default")
# The variants issue 21 asks for, in the report's order.
WANTED = ("atomic", "aggregated", "rpc")
# The variants that send one message per update.
PER_UPDATE = ("atomic", "rpc")
# (setting, numerator, denominator, target): the ratios the issue sets, then the others shown.
TARGETS = (("shm", "aggregated", "peer", 1.5), ("mpi", "aggregated", "peer", 1.5),
           ("mpi", "aggregated", "atomic", 10.0))
OTHERS = (("shm", "atomic", "peer"), ("mpi", "atomic", "peer"), ("shm", "rpc", "peer"),
          ("mpi", "rpc", "peer"), ("shm", "aggregated", "atomic"),
          ("shm", "aggregated+atomic", "peer"), ("shm", "aggregated+origin", "peer"),
          ("shm", "aggregated", "aggregated+atomic"))
# Further programs: a variant with options (not launched unless --variants names them).
EXTRA = {"aggregated+atomic": ["--variant", "aggregated", "--atomic-apply", "on"],
         "aggregated+origin": ["--variant", "aggregated", "--apply-at-origin", "on"]}
SHM_MPIRUN = ["--bind-to", "core", "--mca", "pml", "ob1", "--mca", "btl", "self,vader"]
NETWORK_MPIRUN = ["--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,tcp", "--mca",
                  "osc", "ucx", "-x", "UCX_TLS=tcp,self", "-x", "ONESIDE_TRANSPORT"]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", required=True, type=Path)
    p.add_argument("--runs", type=int, default=9, help="launches of each program (default 9)")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--log2-table", type=int, default=26, help="table of 2^N words (default 26)")
    p.add_argument("--per-update-mpi-log2-table", type=int, default=20,
                   help="the table of the per-update variants (atomic, rpc) on the MPI "
                   "transport (default 20)")
    p.add_argument("--updates-factor", type=int, default=4)
    p.add_argument("--settings", nargs="+", choices=("shm", "mpi"), default=["shm", "mpi"])
    p.add_argument("--verify", choices=("on", "off"), default="on")
    p.add_argument("--mpirun", default="mpirun")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per launch")
    p.add_argument("--variants", nargs="+", default=None,
                   help="the gups variants to launch (default: all offered); also "
                   + ", ".join(f"{k} ({' '.join(v)})" for k, v in EXTRA.items()))
    return p.parse_args()


@dataclass
class config:
    setting: str  # shm | mpi
    program: str  # a gups variant, or "peer"
    cmd: list[str]
    env: dict[str, str]
    rates: list[float] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str]:
        return (self.setting, self.program)


def launch(c: config, verify: bool, timeout: int) -> float:
    out = subprocess.run(c.cmd, env=c.env, capture_output=True, text=True, timeout=timeout)
    m = RATE.search(out.stdout)
    if out.returncode != 0 or m is None or (verify and "Solution validates" not in out.stdout):
        sys.stderr.write(f"run_gups: {' '.join(c.cmd)} failed (status {out.returncode}):\n"
                         f"{out.stdout}{out.stderr}")
        sys.exit(1)
    return float(m.group(1))


def offered_variants(gups: Path) -> list[str]:
    out = subprocess.run([str(gups), "--help"], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, ONESIDE_TRANSPORT="shm"))
    m = VARIANTS.search(out.stdout)
    if m is None:
        sys.exit(f"run_gups: cannot read the variants from `{gups} --help`:\n{out.stdout}")
    return [v.strip() for v in m.group(1).split(",")]


def configs(a: argparse.Namespace, bindir: Path, variants: list[str]) -> list[config]:
    base = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    n = str(a.ranks)

    def args(log2: int) -> list[str]:
        return ["--log2-table", str(log2), "--updates-factor", str(a.updates_factor),
                "--verify", a.verify]

    out = []
    for s in a.settings:
        env = dict(base, ONESIDE_TRANSPORT=s)
        for v in variants:
            slow = s == "mpi" and v in PER_UPDATE
            log2 = a.per_update_mpi_log2_table if slow else a.log2_table
            prog = [str(bindir / "gups"), *args(log2), *EXTRA.get(v, ["--variant", v])]
            if s == "shm":
                cmd = [str(bindir / "oneside-run"), "-n", n, "--bind-to", "core", *prog]
            else:
                cmd = [a.mpirun, "-n", n, *NETWORK_MPIRUN, *prog]
            out.append(config(s, v, cmd, env))
        flags = SHM_MPIRUN if s == "shm" else NETWORK_MPIRUN
        out.append(config(s, "peer", [a.mpirun, "-n", n, *flags, str(bindir / "mpi_gups"),
                                      *args(a.log2_table)], env))
    return out


def name(setting: str, program: str) -> str:
    return f"{setting}/{'MPI bucket peer' if program == 'peer' else program}"


def ratio_line(by_key: dict[tuple[str, str], config], setting: str, num: str, den: str,
               target: float | None) -> str:
    x, y = by_key[(setting, num)], by_key[(setting, den)]
    per_round = [p / q for p, q in zip(x.rates, y.rates)]
    ratio = statistics.median(x.rates) / statistics.median(y.rates)
    goal = ""
    if target is not None:
        goal = f"   target >= {target:g}x: {'met' if ratio >= target else 'NOT met'}"
    return (f"  {name(setting, num)} / {name(setting, den)}: {ratio:.2f}x "
            f"(per round {min(per_round):.2f}-{max(per_round):.2f}x, "
            f"median {statistics.median(per_round):.2f}x){goal}")


def main() -> None:
    a = parse_args()
    bindir = a.build_dir / "bin"
    for prog in ("oneside-run", "gups", "mpi_gups"):
        if not (bindir / prog).exists():
            sys.exit(f"run_gups: {bindir / prog} is missing (build it first)")
    offered = offered_variants(bindir / "gups")
    variants = [v for v in WANTED if v in offered] + [v for v in offered if v not in WANTED]
    missing = [v for v in WANTED if v not in offered]
    if a.variants is not None:
        unknown = [v for v in a.variants if v not in offered and v not in EXTRA]
        if unknown:
            sys.exit(f"run_gups: unknown variants {', '.join(unknown)}")
        variants, missing = a.variants, []
    runs = configs(a, bindir, variants)
    print(f"GUPS, table 2^{a.log2_table} words, {a.updates_factor} updates per word, {a.ranks} "
          f"ranks, {a.runs} interleaved launches each, load average {load_average()}")
    slow = [v for v in variants if v in PER_UPDATE]
    if "mpi" in a.settings and slow:
        print(f"  ({', '.join(slow)} on the MPI transport: table 2^{a.per_update_mpi_log2_table} "
              "words)")
    if missing:
        print(f"  missing variants (not offered by this gups): {', '.join(missing)}")
    for c in runs:
        print(f"  {name(*c.key)}: {' '.join(c.cmd)}")
    for r in range(a.runs):
        k = r % len(runs)
        for c in runs[k:] + runs[:k]:
            c.rates.append(launch(c, a.verify == "on", a.timeout))
        print(f"  round {r + 1}: " + "  ".join(f"{name(*c.key)} {c.rates[-1]:.4g}" for c in runs),
              flush=True)
    print("GUP/s, median (min-max):")
    for c in runs:
        print(f"  {name(*c.key):28s} {statistics.median(c.rates):.4g} "
              f"({min(c.rates):.4g}-{max(c.rates):.4g})")
    by_key = {c.key: c for c in runs}
    print("ratios (of the medians):")
    for setting, num, den, target in TARGETS + tuple(o + (None,) for o in OTHERS):
        if setting not in a.settings:
            continue
        if (setting, num) in by_key and (setting, den) in by_key:
            print(ratio_line(by_key, setting, num, den, target))
        elif target is not None:
            gone = [p for p in (num, den) if (setting, p) not in by_key]
            print(f"  {name(setting, num)} / {name(setting, den)}: not measured "
                  f"(missing: {', '.join(gone)})   target >= {target:g}x")
    print(f"load average now {load_average()}")


if __name__ == "__main__":
    main()
