#!/usr/bin/env python3
"""Runs oneside's micro-benchmarks and their MPI peers and writes the ratio report.

For each rank count, the oneside micro bench (under <build>/bin/oneside-run) and the MPI
peers (under mpirun) run interleaved -- oneside, MPI, oneside, MPI, ... -- so that both see
the same machine state: one process per benchmark family and suite, back to back, the two
suites taking turns to go first. Each benchmark's median over the repetitions goes to
medians.csv, and every ratio is the median of per-repetition ratios;
report.md (also printed) gives the ratios the README quotes: oneside vs MPI for
collectives, waits and RMA latency, and put/get bandwidth vs memcpy and vs MPI RMA.

Standard library only. Needs just a build directory:

    bench/run.py --build-dir build/release [--ranks 2 4] [--repetitions 3] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1 << 20
TIME_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

# Families run as separate, back-to-back processes of the two suites, so that each oneside
# figure and its MPI peer are measured seconds apart (this machine's state changes over
# tens of seconds): name -> (oneside filter, MPI filter).
GROUPS = {
    "barrier": ("^barrier", "^mpi_barrier"),
    "allreduce": ("^allreduce", "^mpi_allreduce"),
    "broadcast": ("^broadcast", "^mpi_bcast"),
    "latency": ("^(put|get)_latency", "^mpi_(put|get)_latency"),
    "wait": ("^(ping_pong|token_ring)", "^mpi_(ping_pong|token_ring)"),
    "bandwidth": ("^(put|get|memcpy)_bandwidth", "^mpi_(put|get)_bandwidth"),
}


def fail(message: str) -> None:
    print(f"run.py: error: {message}", file=sys.stderr)
    sys.exit(1)


# ---- command line ---------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Run oneside's micro-benchmarks interleaved with their MPI peers and "
        "write the ratio report (report.md, medians.csv).")
    p.add_argument("--build-dir", required=True, type=Path,
                   help="a configured and built oneside build directory")
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4],
                   help="rank counts to run (default: 2 4)")
    p.add_argument("--repetitions", type=int, default=3,
                   help="interleaved runs of each suite per rank count (default: 3)")
    p.add_argument("--out", type=Path, default=Path("bench-results"),
                   help="output directory (default: ./bench-results)")
    p.add_argument("--min-time", type=float, default=0.25,
                   help="--benchmark_min_time of every run, seconds (default: 0.25)")
    p.add_argument("--filter", default=None,
                   help="--benchmark_filter for both suites (MPI names start with mpi_); "
                   "each suite then runs once per repetition instead of once per family")
    p.add_argument("--timeout", type=int, default=900,
                   help="seconds after which one run is killed (default: 900)")
    p.add_argument("--no-mpi", action="store_true",
                   help="run only the oneside suite (no MPI peers, no MPI ratios)")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing: rebuild report.md and medians.csv from <out>/raw")
    p.add_argument("--mpirun", default="mpirun", help="the MPI launcher (default: mpirun)")
    p.add_argument("--mpi-osc", default="sm",
                   help="Open MPI one-sided component for the RMA peers, passed as --mca osc "
                   "NAME (default: sm, direct load/store on one node, the strongest peer; "
                   "'default' leaves the choice to Open MPI)")
    a = p.parse_args()
    if a.repetitions < 1:
        p.error("--repetitions must be at least 1")
    if any(n < 1 for n in a.ranks):
        p.error("--ranks must be positive")
    return a


# ---- running --------------------------------------------------------------------------


@dataclass
class suite:
    name: str  # "oneside" or "mpi"
    launcher: list[str]
    program: Path
    options: list[str] = field(default_factory=list)  # launcher options

    def command(self, ranks: int, cores: int, extra: list[str]) -> list[str]:
        if self.name == "oneside":
            # oneside-run binds to cores while ranks <= cores, else leaves ranks unbound.
            return [*self.launcher, "-n", str(ranks), str(self.program), *extra]
        # The same placement policy for Open MPI, spelled out.
        placement = (["--oversubscribe", "--bind-to", "none"] if ranks > cores
                     else ["--bind-to", "core"])
        return [*self.launcher, "-n", str(ranks), *placement, *self.options, str(self.program),
                *extra]


def find_suites(a: argparse.Namespace) -> list[suite]:
    build = a.build_dir.resolve()
    if not (build / "CMakeCache.txt").is_file():
        fail(f"{build} is not a CMake build directory (no CMakeCache.txt); configure and "
             "build oneside first, e.g. cmake --preset release && cmake --build build/release")
    bindir = build / "bin"
    needed = {"oneside-run": "oneside-run", "oneside_micro_bench": "oneside_micro_bench"}
    if not a.no_mpi:
        needed["oneside_mpi_peers"] = "oneside_mpi_peers"
    for exe, target in needed.items():
        path = bindir / exe
        if not (path.is_file() and os.access(path, os.X_OK)):
            hint = ""
            if exe == "oneside_mpi_peers":
                hint = (" (it is built only when CMake finds MPI; install Open MPI and "
                        "reconfigure, or pass --no-mpi)")
            fail(f"{path} is missing{hint}; build it with: cmake --build {build} "
                 f"--target {target}")
    suites = [suite("oneside", [str(bindir / "oneside-run"), "--timeout", str(a.timeout)],
                    bindir / "oneside_micro_bench")]
    if not a.no_mpi:
        mpirun = shutil.which(a.mpirun)
        if mpirun is None:
            fail(f"{a.mpirun} not found on PATH; install Open MPI or pass --no-mpi")
        osc = [] if a.mpi_osc == "default" else ["--mca", "osc", a.mpi_osc]
        suites.append(suite("mpi", [mpirun], bindir / "oneside_mpi_peers", osc))
    return suites


def load_average() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


@dataclass
class run_record:
    suite: str
    ranks: int
    repetition: int
    group: str
    json_path: Path
    load_before: float
    load_after: float
    seconds: float


def run_one(s: suite, ranks: int, rep: int, group: str, bench_filter: str | None,
            a: argparse.Namespace, cores: int, out: Path) -> run_record:
    stem = f"{s.name}-np{ranks}-rep{rep}-{group}"
    json_path = out / "raw" / f"{stem}.json"
    log_path = out / "logs" / f"{stem}.log"
    extra = [f"--benchmark_min_time={a.min_time}", f"--benchmark_out={json_path}",
             "--benchmark_out_format=json", "--benchmark_color=false"]
    if bench_filter:
        extra.append(f"--benchmark_filter={bench_filter}")
    cmd = s.command(ranks, cores, extra)
    env = dict(os.environ)
    if s.name == "mpi" and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    print(f"[run.py] np={ranks} rep {rep}/{a.repetitions} {group:9} {s.name:7}: "
          f"{' '.join(cmd)}", file=sys.stderr, flush=True)
    if json_path.exists():
        json_path.unlink()
    load_before = load_average()
    start = datetime.datetime.now()
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        try:
            proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                  timeout=a.timeout + 60, check=False)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    seconds = (datetime.datetime.now() - start).total_seconds()
    if rc != 0 or not json_path.is_file():
        tail = "".join(log_path.read_text(errors="replace").splitlines(True)[-25:])
        fail(f"{s.name} run at {ranks} ranks failed (exit status {rc}); log {log_path}:\n"
             f"{tail}")
    return run_record(s.name, ranks, rep, group, json_path, load_before, load_average(),
                      seconds)


# ---- results --------------------------------------------------------------------------


@dataclass
class result:
    suite: str
    ranks: int
    benchmark: str  # without the "/manual_time" suffix
    family: str
    bytes: int | None
    by_rep: dict[int, float] = field(default_factory=dict)  # repetition -> ns per op
    oversubscribed: str = "?"

    @property
    def times_ns(self) -> list[float]:
        return list(self.by_rep.values())

    @property
    def median_ns(self) -> float:
        return statistics.median(self.times_ns)

    @property
    def spread(self) -> float:
        """(max - min) / median over the repetitions."""
        return (max(self.times_ns) - min(self.times_ns)) / self.median_ns


def split_name(name: str) -> tuple[str, str, int | None]:
    parts = [p for p in name.split("/") if p != "manual_time"]
    family = parts[0]
    size = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    return "/".join(parts), family, size


def collect(records: list[run_record]) -> tuple[dict, dict]:
    results: dict[tuple[str, int, str], result] = {}
    contexts: dict[tuple[str, int], dict] = {}
    for rec in records:
        data = json.loads(rec.json_path.read_text())
        ctx = data.get("context", {})
        contexts.setdefault((rec.suite, rec.ranks), ctx)
        for b in data.get("benchmarks", []):
            if b.get("error_occurred") or b.get("run_type", "iteration") != "iteration":
                continue
            bench, family, size = split_name(b["name"])
            key = (rec.suite, rec.ranks, bench)
            r = results.setdefault(
                key, result(rec.suite, rec.ranks, bench, family, size,
                            oversubscribed=ctx.get("oversubscribed", "?")))
            r.by_rep[rec.repetition] = (float(b["real_time"])
                                        * TIME_UNIT_NS[b.get("time_unit", "ns")])
    return results, contexts


def write_csv(path: Path, results: dict) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["ranks", "suite", "benchmark", "family", "bytes", "oversubscribed",
                    "median_ns", "min_ns", "max_ns", "spread", "repetitions",
                    "median_bytes_per_second", "median_ops_per_second"])
        for key in sorted(results, key=lambda k: (k[1], k[0], results[k].family,
                                                  results[k].bytes or 0)):
            r = results[key]
            med = r.median_ns
            bps = r.bytes / med * 1e9 if r.bytes is not None and r.family != "barrier" else ""
            w.writerow([r.ranks, r.suite, r.benchmark, r.family,
                        "" if r.bytes is None else r.bytes, r.oversubscribed, f"{med:.3f}",
                        f"{min(r.times_ns):.3f}", f"{max(r.times_ns):.3f}", f"{r.spread:.3f}",
                        len(r.times_ns), f"{bps:.6g}" if bps != "" else "", f"{1e9 / med:.6g}"])


# ---- the report -----------------------------------------------------------------------


def fmt_time(ns: float | None) -> str:
    if ns is None:
        return "n/a"
    if ns < 1e3:
        return f"{ns:.0f} ns" if ns >= 100 else f"{ns:.1f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.3g} µs"
    return f"{ns / 1e6:.3g} ms"


def fmt_size(n: int) -> str:
    if n >= MIB:
        return f"{n // MIB} MiB"
    if n >= 1024:
        return f"{n // 1024} KiB"
    return f"{n} B"


def fmt_bw(nbytes: int, ns: float | None) -> str:
    if ns is None:
        return "n/a"
    gbs = nbytes / ns  # bytes per ns = GB/s
    return f"{gbs:.3g} GB/s" if gbs >= 0.1 else f"{gbs * 1e3:.3g} MB/s"


def fmt_ratio(x: float | None, what: str = "") -> str:
    if x is None:
        return "n/a"
    if x >= 10:
        text = f"{x:.1f}×"
    elif x >= 0.1:
        text = f"{x:.2f}×"
    else:
        text = f"{x:.2g}×"
    return f"{text} {what}".strip()


def fmt_spread(r: result | None) -> str:
    return "n/a" if r is None else f"{r.spread * 100:.0f}%"


@dataclass
class pair:
    median: float
    low: float
    high: float
    values: list[float]  # one ratio per repetition


def fmt_pair(p: pair | None, what: str = "") -> str:
    return fmt_ratio(None if p is None else p.median, what)


def fmt_range(p: pair | None) -> str:
    if p is None:
        return "n/a"
    return f"{fmt_ratio(p.low)[:-1]} – {fmt_ratio(p.high)}"


class report:
    def __init__(self, results: dict, contexts: dict, records: list[run_record],
                 a: argparse.Namespace, cores: int, has_mpi: bool) -> None:
        self.r = results
        self.ctx = contexts
        self.records = records
        self.a = a
        self.cores = cores
        self.has_mpi = has_mpi
        self.lines: list[str] = []
        self.targets: list[tuple[str, str, str]] = []

    def get(self, suite_name: str, ranks: int, bench: str) -> result | None:
        return self.r.get((suite_name, ranks, bench))

    def time(self, suite_name: str, ranks: int, bench: str) -> float | None:
        x = self.get(suite_name, ranks, bench)
        return None if x is None else x.median_ns

    def paired(self, n: int, num: tuple[str, str], den: tuple[str, str]) -> pair | None:
        """Ratio of two benchmarks' times, computed per repetition (a oneside run and the
        MPI run right after it saw about the same machine, and memcpy ran in the same
        process as put/get), then the median and range of those ratios."""
        a, b = self.get(num[0], n, num[1]), self.get(den[0], n, den[1])
        if a is None or b is None:
            return None
        reps = sorted(set(a.by_rep) & set(b.by_rep))
        xs = [a.by_rep[i] / b.by_rep[i] for i in reps if b.by_rep[i] > 0]
        return pair(statistics.median(xs), min(xs), max(xs), xs) if xs else None

    def is_oversubscribed(self, n: int) -> bool:
        """As the oneside run recorded it (its runtime's rule), else ranks > cores."""
        flag = self.ctx.get(("oneside", n), {}).get("oversubscribed")
        return flag == "yes" if flag in ("yes", "no") else n > self.cores

    def out(self, line: str = "") -> None:
        self.lines.append(line)

    def header(self) -> None:
        o = self.ctx.get(("oneside", self.a.ranks[0]), {})
        m = self.ctx.get(("mpi", self.a.ranks[0]), {})
        self.out("# oneside micro-benchmarks: ratios")
        self.out()
        self.out(f"- commit `{o.get('git_commit', 'unknown')}`, oneside "
                 f"{o.get('oneside_version', '?')}, transport {o.get('transport', '?')}"
                 + (f"; peers: {m.get('mpi_library', 'MPI')}, RMA with "
               + ("Open MPI's default osc" if self.a.mpi_osc == "default"
                  else f"`--mca osc {self.a.mpi_osc}`") if self.has_mpi else ""))
        self.out(f"- host `{o.get('host_name', '?')}`: {self.cores} cores, "
                 f"{o.get('mhz_per_cpu', '?')} MHz; {datetime.date.today().isoformat()}")
        self.out(f"- {self.a.repetitions} repetitions per rank count; in each, every family "
                 "(barrier, allreduce, …) runs as a oneside process and an MPI process back to "
                 "back, alternating which goes first; figures are medians over the "
                 "repetitions, ratios are medians of the per-repetition ratios (range given); "
                 f"--benchmark_min_time={self.a.min_time}")
        self.out("- every figure is per operation, the slowest rank's (each batch of K "
                 "operations is timed on every rank and counts as the maximum)")
        self.out("- placement: ranks bound to cores while ranks ≤ cores, unbound when "
                 "oversubscribed (oneside-run's default; mpirun is given the same policy)")
        self.out("- **time ratios** are oneside / MPI (below 1: oneside is faster); "
                 "**bandwidth ratios** are oneside / baseline (above 1: oneside is faster), "
                 "written as \"0.95× memcpy\"")
        self.out("- spread = (max − min) / median over the runs: how noisy a figure was")
        self.out()

    def collectives(self, n: int) -> None:
        mpi = self.has_mpi
        rows = [("barrier", "barrier", "mpi_barrier", "MPI_Barrier"),
                ("allreduce 8 B (one long, sum)", "allreduce/8", "mpi_allreduce/8",
                 "MPI_Allreduce"),
                ("broadcast 1 MiB", f"broadcast/{MIB}", f"mpi_bcast/{MIB}", "MPI_Bcast"),
                ("ping-pong round trip, pairs of ranks", "ping_pong/8", "mpi_ping_pong/8",
                 "Send/Recv"),
                ("token ring, one circle of all ranks", "token_ring/8", "mpi_token_ring/8",
                 "Send/Recv")]
        rows = [r for r in rows if self.time("oneside", n, r[1]) is not None
                or self.time("mpi", n, r[2]) is not None]
        if not rows:
            return
        self.out("### Collectives and waiting (time per operation)")
        self.out()
        if mpi:
            self.out("| operation | oneside | MPI | oneside / MPI | range over runs | "
                     "spread oneside / MPI |")
            self.out("|---|---:|---:|---:|---:|---:|")
        else:
            self.out("| operation | oneside | spread |")
            self.out("|---|---:|---:|")
        for label, ob, mb, mname in rows:
            ot = self.time("oneside", n, ob)
            if mpi:
                mt = self.time("mpi", n, mb)
                p = self.paired(n, ("oneside", ob), ("mpi", mb))
                self.out(f"| {label} | {fmt_time(ot)} | {fmt_time(mt)} ({mname}) | "
                         f"{fmt_pair(p)} | {fmt_range(p)} | "
                         f"{fmt_spread(self.get('oneside', n, ob))} / "
                         f"{fmt_spread(self.get('mpi', n, mb))} |")
            else:
                self.out(f"| {label} | {fmt_time(ot)} | "
                         f"{fmt_spread(self.get('oneside', n, ob))} |")
        self.out()

    def latency(self, n: int) -> None:
        if all(self.time("oneside", n, f"{op}_latency/8") is None for op in ("put", "get")):
            return
        self.out("### Transport latency, 8 B to the next rank, issue + flush")
        self.out()
        if self.has_mpi:
            self.out("| operation | oneside | MPI RMA (lock_all, flush) | oneside / MPI | "
                     "range over runs | spread oneside / MPI |")
            self.out("|---|---:|---:|---:|---:|---:|")
        else:
            self.out("| operation | oneside | spread |")
            self.out("|---|---:|---:|")
        for op in ("put", "get"):
            ob, mb = f"{op}_latency/8", f"mpi_{op}_latency/8"
            ot = self.time("oneside", n, ob)
            if self.has_mpi:
                mt = self.time("mpi", n, mb)
                p = self.paired(n, ("oneside", ob), ("mpi", mb))
                self.out(f"| {op} 8 B | {fmt_time(ot)} | {fmt_time(mt)} | "
                         f"{fmt_pair(p)} | {fmt_range(p)} | "
                         f"{fmt_spread(self.get('oneside', n, ob))} / "
                         f"{fmt_spread(self.get('mpi', n, mb))} |")
            else:
                self.out(f"| {op} 8 B | {fmt_time(ot)} | "
                         f"{fmt_spread(self.get('oneside', n, ob))} |")
        self.out()

    def sizes(self, n: int) -> list[int]:
        return sorted({r.bytes for (s, k, _), r in self.r.items()
                       if k == n and r.family in ("put_bandwidth", "get_bandwidth",
                                                  "memcpy_bandwidth") and r.bytes})

    def bandwidth(self, n: int) -> None:
        mpi = self.has_mpi
        if not self.sizes(n):
            return
        self.out("### Bandwidth to the next rank's segment (back-to-back, one flush per "
                 "batch; every rank at once)")
        self.out()
        self.out("Bandwidth ratios: above 1 means oneside moves bytes faster than the baseline. "
                 "GB/s columns are each benchmark's median; ratios are medians of "
                 "per-repetition ratios, so on a noisy machine they need not equal the "
                 "quotient of two columns.")
        self.out()
        head = "| size | memcpy | put | put vs memcpy |"
        rule = "|---:|---:|---:|---:|"
        if mpi:
            head += " put vs MPI_Put |"
            rule += "---:|"
        head += " get | get vs memcpy |"
        rule += "---:|---:|"
        if mpi:
            head += " get vs MPI_Get |"
            rule += "---:|"
        self.out(head)
        self.out(rule)
        for size in self.sizes(n):
            mc = ("oneside", f"memcpy_bandwidth/{size}")
            row = f"| {fmt_size(size)} | {fmt_bw(size, self.time('oneside', n, mc[1]))} |"
            for op in ("put", "get"):
                ours = ("oneside", f"{op}_bandwidth/{size}")
                t = self.time("oneside", n, ours[1])
                row += f" {fmt_bw(size, t)} | {fmt_pair(self.paired(n, mc, ours))} |"
                if mpi:
                    theirs = ("mpi", f"mpi_{op}_bandwidth/{size}")
                    row += f" {fmt_pair(self.paired(n, theirs, ours))} |"
            self.out(row)
        self.out()
        self.out("README form:")
        self.out()
        for size in (64 * 1024, MIB, 4 * MIB):
            mc = ("oneside", f"memcpy_bandwidth/{size}")
            parts = []
            for op in ("put", "get"):
                ours = ("oneside", f"{op}_bandwidth/{size}")
                if self.get("oneside", n, ours[1]) is None:
                    continue
                text = (f"{op} {fmt_size(size)}, shm: "
                        f"{fmt_pair(self.paired(n, mc, ours), 'memcpy')}")
                if mpi:
                    theirs = ("mpi", f"mpi_{op}_bandwidth/{size}")
                    text += f", {fmt_pair(self.paired(n, theirs, ours), 'MPI RMA')}"
                parts.append(text)
            if parts:
                self.out(f"- {n} ranks: " + "; ".join(parts))
        self.out()

    def check_targets(self) -> None:
        if not self.has_mpi:
            return
        for n in self.a.ranks:
            ot, mt = self.time("oneside", n, "barrier"), self.time("mpi", n, "mpi_barrier")
            p = self.paired(n, ("oneside", "barrier"), ("mpi", "mpi_barrier"))
            x = None if p is None else p.median
            over = self.is_oversubscribed(n)
            limit = 1.0 if over else 0.5
            if n == 2 and not over:
                name = "barrier at 2 ranks ≤ 0.5× MPI_Barrier"
            elif over:
                name = (f"barrier at {n} ranks on {self.cores} cores no worse than "
                        "MPI_Barrier oversubscribed the same way (≤ 1.0×)")
            else:
                continue
            if p is None or x is None:
                self.targets.append((name, "n/a", "n/a"))
                continue
            within = sum(1 for v in p.values if v <= limit)
            verdict = ("met" if x <= limit else "**not met**") + (
                f" (within the target in {within} of {len(p.values)} runs)")
            self.targets.append((name, f"{fmt_time(ot)} vs {fmt_time(mt)}: {fmt_ratio(x)} "
                                 f"(runs: {fmt_range(p)})", verdict))
            pp = self.time("oneside", n, "token_ring/8")
            if over and pp is not None:
                verdict = "met" if pp < 100e3 else "**not met**"
                self.targets.append((f"oversubscribed wait at {n} ranks: microseconds, not "
                                     "the 7.9 ms of a spin-only wait (token ring circle)",
                                     fmt_time(pp), verdict))

    def noise(self) -> None:
        self.out("## Noise")
        self.out()
        loads = [x for rec in self.records for x in (rec.load_before, rec.load_after)
                 if x == x]  # not NaN
        if loads:
            self.out(f"- 1-minute load average during the runs: {min(loads):.2f} … "
                     f"{max(loads):.2f} (on {self.cores} cores)")
        for s in ("oneside", "mpi"):
            spreads = sorted(((r.spread, r.benchmark, r.ranks) for r in self.r.values()
                              if r.suite == s and len(r.times_ns) > 1), reverse=True)
            if not spreads:
                continue
            med = statistics.median(x[0] for x in spreads)
            worst = ", ".join(f"{b} at {k} ranks {sp * 100:.0f}%" for sp, b, k in spreads[:3])
            self.out(f"- {s}: median spread {med * 100:.0f}%; largest: {worst}")
        total = sum(rec.seconds for rec in self.records)
        self.out(f"- {len(self.records)} run(s), {total:.0f} s in all; raw JSON in raw/, "
                 "logs in logs/")
        self.out()

    def build(self) -> str:
        self.header()
        self.check_targets()
        if self.targets:
            self.out("## Targets (issue 2)")
            self.out()
            self.out("| target | measured | verdict |")
            self.out("|---|---|---|")
            for name, measured, verdict in self.targets:
                self.out(f"| {name} | {measured} | {verdict} |")
            self.out()
        for n in self.a.ranks:
            over = self.is_oversubscribed(n)
            self.out(f"## {n} ranks on {self.cores} cores"
                     + (" (oversubscribed)" if over else ""))
            self.out()
            self.collectives(n)
            self.latency(n)
            self.bandwidth(n)
        self.noise()
        return "\n".join(self.lines)


# ---- main -----------------------------------------------------------------------------


def none_if_nan(x: float) -> float | None:
    return None if x != x else x


def nan_if_none(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def stored_records(out: Path) -> list[run_record]:
    """The runs of an earlier invocation: <out>/runs.json, else the names of raw/*.json."""
    try:
        saved = json.loads((out / "runs.json").read_text())
        return [run_record(r["suite"], r["ranks"], r["repetition"], r["group"],
                           out / "raw" / r["json"], nan_if_none(r["load_before"]),
                           nan_if_none(r["load_after"]), r["seconds"]) for r in saved]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    records = []
    for path in sorted((out / "raw").glob("*.json")):
        parts = path.stem.split("-")  # suite, npN, repR, group
        if len(parts) != 4 or not parts[1].startswith("np") or not parts[2].startswith("rep"):
            continue
        records.append(run_record(parts[0], int(parts[1][2:]), int(parts[2][3:]), parts[3],
                                  path, float("nan"), float("nan"), 0.0))
    return records


def main() -> None:
    a = parse_args()
    out = a.out.resolve()
    if a.report_only:
        records = stored_records(out)
        if not records:
            fail(f"no results in {out / 'raw'} to report on")
        a.ranks = sorted({r.ranks for r in records})
        a.repetitions = max(r.repetition for r in records)
        a.no_mpi = not any(r.suite == "mpi" for r in records)
        cores = len(os.sched_getaffinity(0)) or 1
        finish(records, a, cores, out)
        return
    suites = find_suites(a)
    (out / "raw").mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = cores or 1

    groups = ({"all": (a.filter, a.filter)} if a.filter else GROUPS)
    records: list[run_record] = []
    for n in a.ranks:
        for rep in range(1, a.repetitions + 1):
            for group, filters in groups.items():
                # Interleaved, and alternating who goes first: oneside, MPI | MPI, oneside …
                order = suites if rep % 2 == 1 else list(reversed(suites))
                for s in order:
                    f = filters[0] if s.name == "oneside" else filters[1]
                    records.append(run_one(s, n, rep, group, f, a, cores, out))

    finish(records, a, cores, out)


def finish(records: list[run_record], a: argparse.Namespace, cores: int, out: Path) -> None:
    (out / "runs.json").write_text(json.dumps(
        [{"suite": r.suite, "ranks": r.ranks, "repetition": r.repetition, "group": r.group,
          "json": r.json_path.name, "load_before": none_if_nan(r.load_before),
          "load_after": none_if_nan(r.load_after), "seconds": r.seconds} for r in records],
        indent=1) + "\n")
    results, contexts = collect(records)
    if not results:
        fail("the runs produced no benchmark results (check --filter)")
    write_csv(out / "medians.csv", results)
    text = report(results, contexts, records, a, cores, has_mpi=not a.no_mpi).build()
    (out / "report.md").write_text(text + "\n")
    print(text)
    print(f"[run.py] wrote {out / 'report.md'} and {out / 'medians.csv'}", file=sys.stderr)


if __name__ == "__main__":
    main()
