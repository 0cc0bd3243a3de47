#!/usr/bin/env python3
"""Runs the graph apps against their baselines, interleaved, and prints medians and ratios.

Issue 22's targets (scale 18, edgefactor 16, 2 ranks unless said):
  BFS harmonic-mean TEPS >= 2x the Graph500 v3 reference, >= 1.5x the MPI two-sided peer;
  every kernel (BFS, SSSP, PageRank iteration, CC) faster than the single-thread baseline, and
  the COST (the fewest ranks that beat one thread).
The programs (arms), all on the same graph (--scale, --edgefactor, --seed) and search keys:
  oneside    apps/graph's graph500 (and pagerank, cc if built) under oneside-run -n R
             (--transport mpi: under mpirun over TCP with ONESIDE_TRANSPORT=mpi, the MPI
             programs under the same mpirun flags: the issue's ">= 1.2x the peer over TCP");
  reference  the Graph500 v3 reference (--reference PATH, e.g. graph500_reference_bfs_sssp;
             bench/README.md builds it) under mpirun -n R: its own Kronecker graph, so its
             TEPS compares as the rate users compare, not on the same edges;
  mpi-peer   bench/peers/mpi_graph_bfs under mpirun -n R (shared-memory BTL, bound to cores);
  serial     bench/peers/graph_serial, the single-thread COST baseline;
  tbb        bench/peers/graph_tbb with R threads.
Each round launches every arm once at every rank count of --ranks, the order rotated from one
round to the next, so all see the same machine state. A launch's figures are the Graph500 lines
`bfs  harmonic_mean_TEPS`, `sssp harmonic_mean_TEPS` and the lines `pagerank_iteration_time`,
`cc_time`; the peers must print "Solution validates" when --verify is on. The report gives each
figure's median and min-max spread, and each ratio as the ratio of the medians (as speed: > 1
means the first is faster) with the range of the per-round ratios.

An arm whose binary is missing is skipped with a message (the oneside graph500 before it is
built, the reference without --reference). Standard library only; builds nothing:

    bench/run_graph.py --build-dir build/release [--runs 5] [--ranks 1 2] [--scale 18] \
        [--reference /tmp/g500/src/graph500_reference_bfs_sssp] [--transport shm|mpi] \
        [--oneside-args "--scale {scale} --edgefactor {edgefactor} --seed {seed} ..."]
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from oneside_bench.util import load_average

# metric -> (regex of its line, True if higher is better, unit)
METRICS = {
    "bfs_teps": (re.compile(r"^bfs\s+harmonic_mean_TEPS:\s*!?\s*([0-9.eE+-]+)", re.M), True,
                 "TEPS"),
    "sssp_teps": (re.compile(r"^sssp\s+harmonic_mean_TEPS:\s*!?\s*([0-9.eE+-]+)", re.M), True,
                  "TEPS"),
    # The peers' lines, or apps/graph's pagerank ("time per iteration: X s", the mean of the
    # iterations, as the peers') and cc ("cc time: X s (fastest of N...", as the peers').
    "pagerank_iteration_time": (re.compile(
        r"^(?:pagerank_iteration_time:|time per iteration:)\s*([0-9.eE+-]+)", re.M), False, "s"),
    "cc_time": (re.compile(r"^(?:cc_time:|cc time:)\s*([0-9.eE+-]+)", re.M), False, "s"),
}
KERNEL = {"bfs_teps": "BFS", "sssp_teps": "SSSP", "pagerank_iteration_time": "PageRank iteration",
          "cc_time": "CC"}
ONESIDE_PROGRAMS = ("graph500", "pagerank", "cc")
# Per-program arguments after --oneside-args: cc reports the fastest of 3 runs, as the peers'
# --cc-runs default does (one cold run against the peers' best of 3 would not compare).
ONESIDE_EXTRA_ARGS = {"cc": ["--repeat", "3"]}
ARMS = ("oneside", "reference", "mpi-peer", "serial", "tbb")
SHM_MPIRUN = ["--bind-to", "core", "--mca", "pml", "ob1", "--mca", "btl", "self,vader"]
# --transport mpi: every rank its own node as far as MPI knows (TCP btl, osc/ucx over UCX's
# TCP, ranks unbound), as bench/run_gups.py's MPI setting.
NETWORK_MPIRUN = ["--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,tcp", "--mca",
                  "osc", "ucx", "-x", "UCX_TLS=tcp,self", "-x", "ONESIDE_TRANSPORT"]
# (numerator, denominator, metric, target): the targets per transport; the COST lines
# come apart.
TARGETS = {"shm": (("oneside", "reference", "bfs_teps", 2.0),
                   ("oneside", "mpi-peer", "bfs_teps", 1.5)),
           "mpi": (("oneside", "mpi-peer", "bfs_teps", 1.2),)}
OTHERS = (("oneside", "reference", "sssp_teps"), ("oneside", "tbb", "bfs_teps"),
          ("mpi-peer", "reference", "bfs_teps"), ("tbb", "serial", "bfs_teps"),
          ("tbb", "serial", "sssp_teps"), ("tbb", "serial", "pagerank_iteration_time"),
          ("tbb", "serial", "cc_time"), ("mpi-peer", "serial", "bfs_teps"),
          ("reference", "serial", "bfs_teps"))


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", required=True, type=Path)
    p.add_argument("--runs", type=int, default=5, help="rounds (default 5)")
    p.add_argument("--ranks", type=int, nargs="+", default=[2],
                   help="rank (and TBB thread) counts of the parallel arms (default 2)")
    p.add_argument("--scale", type=int, default=18)
    p.add_argument("--edgefactor", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--verify", choices=("on", "off"), default="off",
                   help="the peers' --verify (checks against serial.hpp: small scales only)")
    p.add_argument("--reference", type=Path, default=None,
                   help="a Graph500 v3 reference binary (graph500_reference_bfs[_sssp])")
    p.add_argument("--reference-validation", choices=("on", "off"), default="off",
                   help="let the reference validate its trees (slow; off sets SKIP_VALIDATION)")
    p.add_argument("--oneside-args", default="--scale {scale} --edgefactor {edgefactor} "
                   "--seed {seed}",
                   help="the oneside programs' arguments, {scale} {edgefactor} {seed} "
                   "substituted (default: %(default)s)")
    p.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS),
                   help="the programs to run (default: all)")
    p.add_argument("--transport", choices=("shm", "mpi"), default="shm",
                   help="shm: oneside under oneside-run, the MPI programs on the vader BTL; mpi: "
                   "everything under mpirun over TCP, oneside with ONESIDE_TRANSPORT=mpi")
    p.add_argument("--mpirun", default="mpirun")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per launch")
    return p.parse_args()


@dataclass
class arm:
    name: str     # oneside | reference | mpi-peer | serial | tbb
    ranks: int    # 1 for serial
    cmds: list[list[str]]  # the launches of one round (oneside: one per program)
    env: dict[str, str]
    needs_validates: bool
    values: dict[str, list[float]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.name if self.name == "serial" else f"{self.name}@{self.ranks}"


def parse_metrics(text: str) -> dict[str, float]:
    """The figures of one launch's output (every metric whose line it prints)."""
    out = {}
    for k, (rx, _, _) in METRICS.items():
        m = rx.search(text)
        if m is not None:
            out[k] = float(m.group(1))
    return out


def launch(a: arm, timeout: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    for cmd in a.cmds:
        out = subprocess.run(cmd, env=a.env, capture_output=True, text=True, timeout=timeout)
        got = parse_metrics(out.stdout)
        bad = out.returncode != 0 or not got or "No results printed" in out.stdout
        if a.needs_validates and "Solution validates" not in out.stdout:
            bad = True
        if bad:
            sys.stderr.write(f"run_graph: {shlex.join(cmd)} failed (status {out.returncode}):\n"
                             f"{out.stdout[-4000:]}{out.stderr[-4000:]}")
            sys.exit(1)
        figures.update(got)
    return figures


def arms(a: argparse.Namespace) -> list[arm]:
    bindir = a.build_dir / "bin"
    base = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                ONESIDE_TRANSPORT=a.transport)
    graph = ["--scale", str(a.scale), "--edgefactor", str(a.edgefactor), "--seed", str(a.seed)]
    peer = [*graph, "--verify", a.verify]
    verify = a.verify == "on"
    flags = SHM_MPIRUN if a.transport == "shm" else NETWORK_MPIRUN
    out = []

    def have(path: Path | None, what: str) -> bool:
        if path is not None and path.exists():
            return True
        print(f"  skipped: {what} ({path if path else 'no path given'} is missing)")
        return False

    for n in a.ranks:
        if "oneside" in a.arms:
            progs = [p for p in ONESIDE_PROGRAMS if (bindir / p).exists()]
            if not (bindir / "oneside-run").exists() or not progs:
                print(f"  skipped: oneside at {n} ranks (no {bindir}/oneside-run or none of "
                      f"{', '.join(ONESIDE_PROGRAMS)} built)")
            else:
                if a.transport == "shm":
                    launcher = [str(bindir / "oneside-run"), "-n", str(n), "--bind-to", "core"]
                else:
                    launcher = [a.mpirun, "-n", str(n), *NETWORK_MPIRUN]
                args = shlex.split(a.oneside_args.format(scale=a.scale, edgefactor=a.edgefactor,
                                                         seed=a.seed))
                cmds = [[*launcher, str(bindir / p), *args, *ONESIDE_EXTRA_ARGS.get(p, [])]
                        for p in progs]
                out.append(arm("oneside", n, cmds, dict(base, ONESIDE_TRANSPORT=a.transport),
                               False))
        if "reference" in a.arms and have(a.reference, "the Graph500 reference"):
            env = dict(base)
            if a.reference_validation == "off":
                env["SKIP_VALIDATION"] = "1"
            out.append(arm("reference", n, [[a.mpirun, "-n", str(n), *flags,
                                             str(a.reference), str(a.scale),
                                             str(a.edgefactor)]], env, False))
        if "mpi-peer" in a.arms and have(bindir / "mpi_graph_bfs", "the MPI two-sided peer"):
            out.append(arm("mpi-peer", n, [[a.mpirun, "-n", str(n), *flags,
                                            str(bindir / "mpi_graph_bfs"), *peer]], base,
                           verify))
        if "tbb" in a.arms and have(bindir / "graph_tbb", "the TBB peer"):
            out.append(arm("tbb", n, [[str(bindir / "graph_tbb"), "--threads", str(n), *peer]],
                           base, verify))
    if "serial" in a.arms and have(bindir / "graph_serial", "the single-thread baseline"):
        out.append(arm("serial", 1, [[str(bindir / "graph_serial"), *peer]], base, verify))
    return out


def fmt(metric: str, x: float) -> str:
    return f"{x:.4g}"


def speed_ratio(metric: str, num: float, den: float) -> float:
    """How many times faster num is than den."""
    return num / den if METRICS[metric][1] else den / num


def ratio_line(x: arm, y: arm, metric: str, target: float | None) -> str:
    per_round = [speed_ratio(metric, p, q) for p, q in zip(x.values[metric], y.values[metric])]
    r = speed_ratio(metric, statistics.median(x.values[metric]),
                    statistics.median(y.values[metric]))
    goal = ""
    if target is not None:
        goal = f"   target >= {target:g}x: {'met' if r >= target else 'NOT met'}"
    return (f"  {KERNEL[metric]:18s} {x.label} / {y.label}: {r:.3g}x "
            f"(per round {min(per_round):.3g}-{max(per_round):.3g}x){goal}")


def report(runs: list[arm], ranks: list[int], transport: str) -> None:
    print("medians (min-max):")
    for m, (_, higher, unit) in METRICS.items():
        for a in runs:
            v = a.values.get(m)
            if v:
                print(f"  {KERNEL[m]:18s} {a.label:14s} {fmt(m, statistics.median(v))} {unit} "
                      f"({fmt(m, min(v))}-{fmt(m, max(v))})")
    by = {(a.name, a.ranks): a for a in runs}
    serial = by.get(("serial", 1))
    print("ratios (of the medians, as speed):")
    for n in ranks:
        for num, den, m, *t in TARGETS[transport] + OTHERS:
            target = t[0] if t else None
            x = by.get((num, n))
            y = serial if den == "serial" else by.get((den, n))
            if x and y and m in x.values and m in y.values:
                print(ratio_line(x, y, m, target))
            elif target is not None:
                print(f"  {KERNEL[m]:18s} {num}@{n} / {den}@{n}: not measured   "
                      f"target >= {target:g}x")
        if serial is not None:
            for m in METRICS:
                x = by.get(("oneside", n))
                if x and m in x.values and m in serial.values:
                    print(ratio_line(x, serial, m, 1.0))
    if serial is None:
        return
    print("COST (the fewest ranks whose median beats the single thread; of --ranks):")
    for name in ("oneside", "mpi-peer", "reference", "tbb"):
        for m in METRICS:
            counts = sorted(n for (a, n) in by if a == name and m in by[(a, n)].values)
            if not counts or m not in serial.values:
                continue
            s = statistics.median(serial.values[m])
            beat = [n for n in counts
                    if speed_ratio(m, statistics.median(by[(name, n)].values[m]), s) > 1.0]
            cost = str(beat[0]) if beat else f"> {counts[-1]}"
            print(f"  {KERNEL[m]:18s} {name:10s} COST {cost}")


def main() -> None:
    a = parse_args()
    print(f"Graph kernels, scale {a.scale}, edgefactor {a.edgefactor}, seed {a.seed}, "
          f"transport {a.transport}, ranks "
          f"{' '.join(map(str, a.ranks))}, {a.runs} interleaved rounds, load average "
          f"{load_average()}")
    runs = arms(a)
    if not runs:
        sys.exit("run_graph: nothing to run")
    for r in runs:
        for c in r.cmds:
            print(f"  {r.label}: {shlex.join(c)}")
    for i in range(a.runs):
        k = i % len(runs)
        for r in runs[k:] + runs[:k]:
            for m, v in launch(r, a.timeout).items():
                r.values.setdefault(m, []).append(v)
        print(f"  round {i + 1}: " + "  ".join(
            f"{r.label} " + ",".join(f"{KERNEL[m]} {fmt(m, v[-1])}" for m, v in r.values.items())
            for r in runs), flush=True)
    report(runs, a.ranks, a.transport)
    print(f"load average now {load_average()}")


if __name__ == "__main__":
    main()
