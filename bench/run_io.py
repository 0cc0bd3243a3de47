#!/usr/bin/env python3
"""Runs oneside's collective file I/O against its MPI-IO peer and dd, interleaved; prints ratios.

Issue 24's bench rows: write_at_all and read_at_all of 1 GiB in total from 2 and 4 ranks, with
a contiguous view and with an interleaved one (4 KiB blocks round-robin over the ranks), on
/tmp and on /dev/shm:
  >= 1.0x Open MPI's MPI_File_write_at_all / read_at_all of the same pattern
       (bench/peers/mpi_io_bench, Open MPI's default I/O component, OMPIO);
  >= 0.8x the file system's dd-style single-stream write bandwidth
       (oneside_io_bench --engine dd: one process, one large pwrite of the same total).
Programs: bench/micro/io_bench.cpp (oneside_io_bench, engines default = file::open's defaults,
direct = collective buffering off, cb = on, staged / unstaged = the defaults with every
large access / none through the staging buffer, pread = the defaults with
ONESIDE_IO_MAPPED_READS=0; --cb-nodes adds the hint cb_nodes) under oneside-run, the peer under mpirun
(bound to cores at 2 ranks, unbound and oversubscribed above the core count), dd at 1 rank.

Each round launches every configuration once, the order rotated from one round to the next, so
all see the same machine state; a launch's figure is the median of its --reps timed passes
(slowest rank each; the read checked against the data written). The report gives each one's
median over the rounds with the min-max spread, and each ratio oneside/MPI-IO and oneside/dd
as time ratio of the medians (above 1: oneside is faster) with the range of the per-round
ratios, and the load average before and after. Every launch removes its file.

Standard library only; needs a build directory holding oneside_io_bench, mpi_io_bench and
oneside-run:

    bench/run_io.py --build-dir build/work [--runs 3] [--ranks 2 4] [--dirs /tmp /dev/shm] \
        [--patterns contiguous interleaved] [--engines default direct] [--bytes 1073741824]
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

LINE = re.compile(r"^(write_at_all|read_at_all) median_s ([0-9.]+)", re.M)
OPS = ("write_at_all", "read_at_all")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", required=True, type=Path)
    p.add_argument("--runs", type=int, default=3, help="launches of each program (default 3)")
    p.add_argument("--reps", type=int, default=3, help="timed passes per launch (default 3)")
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    p.add_argument("--dirs", nargs="+", default=["/tmp", "/dev/shm"])
    p.add_argument("--patterns", nargs="+", choices=("contiguous", "interleaved"),
                   default=["contiguous", "interleaved"])
    p.add_argument("--engines", nargs="+", choices=("default", "direct", "cb", "staged", "unstaged",
                                                    "pread"),
                   default=["default", "direct"])
    p.add_argument("--cb-nodes", type=int, default=0,
                   help="the hint cb_nodes for the cb engine and the peer (default: none)")
    p.add_argument("--bytes", type=int, default=1 << 30)
    p.add_argument("--no-peer", action="store_true", help="leave out the MPI-IO launches")
    p.add_argument("--mpirun", default="mpirun")
    p.add_argument("--timeout", type=int, default=600, help="seconds per launch")
    return p.parse_args()


@dataclass
class config:
    key: tuple[str, int, str, str]  # (dir, ranks, pattern, program)
    cmd: list[str]
    env: dict[str, str]
    times: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPS})


def launch(c: config, timeout: int) -> None:
    out = subprocess.run(c.cmd, env=c.env, capture_output=True, text=True, timeout=timeout)
    got = dict((m.group(1), float(m.group(2))) for m in LINE.finditer(out.stdout))
    if out.returncode != 0 or len(got) != len(OPS) or "FAILED" in out.stdout:
        sys.stderr.write(f"run_io: {' '.join(c.cmd)} failed (status {out.returncode}):\n"
                         f"{out.stdout}{out.stderr}")
        sys.exit(1)
    for op in OPS:
        c.times[op].append(got[op])


def configs(a: argparse.Namespace, bindir: Path) -> list[config]:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cores = os.cpu_count() or 1
    out = []
    for d in a.dirs:
        common = ["--dir", d, "--bytes", str(a.bytes), "--reps", str(a.reps)]
        out.append(config((d, 1, "-", "dd"), [str(bindir / "oneside-run"), "-n", "1",
                                               str(bindir / "oneside_io_bench"), "--engine", "dd",
                                               *common], env))
        for n in a.ranks:
            for pat in a.patterns:
                args = [*common, "--pattern", pat]
                hints = ["--hints", f"cb_nodes={a.cb_nodes}"] if a.cb_nodes > 0 else []
                bind = (["--bind-to", "core"] if n <= cores else
                        ["--oversubscribe", "--bind-to", "none"])
                if not a.no_peer:
                    out.append(config((d, n, pat, "MPI-IO"),
                                      [a.mpirun, "-n", str(n), *bind,
                                       str(bindir / "mpi_io_bench"), *args, *hints], env))
                for e in a.engines:
                    if pat == "contiguous" and e == "direct" and "default" in a.engines:
                        continue  # the default is direct for contiguous views
                    if pat == "interleaved" and e in ("staged", "unstaged") and \
                            "default" in a.engines:
                        continue  # interleaved views go through collective buffering
                    extra = hints if e != "direct" else []
                    engine, run_env = e, env
                    if e == "pread":  # the default engine, a pread per piece of a read
                        engine, run_env = "default", dict(env, ONESIDE_IO_MAPPED_READS="0")
                    out.append(config((d, n, pat, e),
                                      [str(bindir / "oneside-run"), "-n", str(n),
                                       str(bindir / "oneside_io_bench"), "--engine", engine,
                                       *args, *extra], run_env))
    return out


def ratio(num: list[float], den: list[float]) -> str:
    """Time ratio den/num of the medians (above 1: num is faster), with the per-round range."""
    per_round = [q / p for p, q in zip(num, den)]
    r = statistics.median(den) / statistics.median(num)
    return f"{r:.2f}x ({min(per_round):.2f}-{max(per_round):.2f})"


def main() -> None:
    a = parse_args()
    bindir = a.build_dir / "bin"
    for prog in ("oneside-run", "oneside_io_bench", "mpi_io_bench"):
        if not (bindir / prog).exists():
            sys.exit(f"run_io: {bindir / prog} is missing (build it first)")
    runs = configs(a, bindir)
    print(f"file I/O, {a.bytes} bytes in total, {a.runs} interleaved launches each, "
          f"{a.reps} timed passes per launch, load average {load_average()}")
    for r in range(a.runs):
        k = r % len(runs)
        for c in runs[k:] + runs[:k]:
            launch(c, a.timeout)
        print(f"  round {r + 1} done, load average {load_average()}", flush=True)
    by_key = {c.key: c for c in runs}
    print("seconds, median over launches (min-max); ratios are time ratios (above 1: oneside "
          "faster), of the medians, with the per-round range:")
    for d in a.dirs:
        dd = by_key[(d, 1, "-", "dd")]
        print(f"{d}: dd single stream write {statistics.median(dd.times['write_at_all']):.4f} s "
              f"({min(dd.times['write_at_all']):.4f}-{max(dd.times['write_at_all']):.4f}), "
              f"{a.bytes / statistics.median(dd.times['write_at_all']) / 1e9:.2f} GB/s")
        for n in a.ranks:
            for pat in a.patterns:
                peer = by_key.get((d, n, pat, "MPI-IO"))
                for op in OPS:
                    p = peer.times[op] if peer else []
                    line = f"  {n} ranks {pat:11s} {op:12s}"
                    if p:
                        line += f" MPI-IO {statistics.median(p):.4f} ({min(p):.4f}-{max(p):.4f})"
                    for e in a.engines:
                        if (d, n, pat, e) not in by_key:
                            continue
                        t = by_key[(d, n, pat, e)].times[op]
                        line += (f" | {e} {statistics.median(t):.4f} ({min(t):.4f}-{max(t):.4f})"
                                 + (f" /MPI-IO {ratio(t, p)}" if p else ""))
                        if op == "write_at_all":
                            line += f" /dd {ratio(t, dd.times['write_at_all'])}"
                    print(line)
    print(f"load average now {load_average()}")


if __name__ == "__main__":
    main()
