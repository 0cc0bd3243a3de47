#!/usr/bin/env python3
"""Runs oneside's micro-benchmarks and their MPI peers and writes the ratio report.

For each rank count, the oneside micro bench (under <build>/bin/oneside-run) and the MPI
peers (under mpirun) run interleaved -- oneside, MPI, oneside, MPI, ... -- so that both see
the same machine state: one process per benchmark family and suite, back to back, the two
suites taking turns to go first. Each benchmark's median over the repetitions goes to
medians.csv, and every ratio is the median of per-repetition ratios;
report.md (also printed) gives the ratios the README quotes: oneside vs MPI for
collectives, waits and RMA latency, and put/get bandwidth vs memcpy and vs MPI RMA; for the
RMA windows of issue 3 (one family per kind of window, each MPI process on the Open MPI
one-sided component that kind needs), latencies, bandwidth, accumulate scaling and a table
of the issue's targets with verdicts; for the window synchronization calls (the sync family:
empty fence, PSCW, lock and flush epochs), oneside vs Open MPI's osc/sm and the targets.

With --transport mpi, both suites run under mpirun on the MPI transport's network path (TCP,
osc/ucx; oneside with ONESIDE_TRANSPORT=mpi, every peer through MPI), and the report compares
oneside's RMA over that transport with raw MPI RMA on the same path, against the overhead
targets of the MPI transport.

The pgas family (micro/pgas_bench.cpp: global_ptr operations, rank 0 to rank 1, next to the
same operations over a raw rma::window and memcpy, all in one process) has no MPI peer; its
peer is OpenSHMEM (peers/oshmem_bench.cpp, Open MPI's OSHMEM under oshrun), run as a third
suite interleaved with it when it was built (shm transport only). The report then gives
global_ptr vs raw rma window (one run) and pgas vs OpenSHMEM (paired by repetition, two
launches), against the PGAS layer's targets.

Standard library only. Needs just a build directory:

    bench/run.py --build-dir build/release [--ranks 2 4] [--repetitions 3] [--out DIR]
    bench/run.py --build-dir build/release --transport mpi [--ranks 2] [--repetitions 3]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from oneside_bench.gbench import (GROUPS, MIB, NETWORK_FAMILIES, NETWORK_MPIRUN, NETWORK_OSC,
                                  OSHMEM_OSHRUN, RMA_OSC_DEFAULT, SWEEP_FAMILIES, collect,
                                  family_osc, find_suites, result, run_interleaved, run_record,
                                  write_csv)
from oneside_bench.util import fail

# The PGAS layer's targets: a global_ptr operation within 10% of the same operation over a raw
# rma window in the same run (time ≤ 1.10×; bandwidth ≥ 0.90×), and at least OpenSHMEM's speed
# on one node (time ≤ 1×; bandwidth ≥ 1×). Rows: (label, pgas bench, raw window bench,
# OpenSHMEM bench or None, memcpy bench for the bandwidth rows or None). A row is a bandwidth
# row when it has a memcpy bench.
PGAS_RMA_LATENCY_LIMIT = 1.10
PGAS_RMA_BANDWIDTH_LIMIT = 0.90
PGAS_SHMEM_LIMIT = 1.0
PGAS_ROWS = (
    ("rput 8 B + wait (remote completion)", "pgas_put_latency/rput/8",
     "pgas_put_latency/window/8", "oshmem_put_latency/8", None),
    ("put 8 B + quiet (SHMEM's pattern)", "pgas_put_latency/put_quiet/8",
     "pgas_put_latency/window/8", "oshmem_put_latency/8", None),
    ("rget 8 B + wait", "pgas_get_latency/rget/8", "pgas_get_latency/window/8",
     "oshmem_get_latency/8", None),
    ("get 8 B (blocking)", "pgas_get_latency/get/8", "pgas_get_latency/window/8",
     "oshmem_get_latency/8", None),
    ("fetch_add int64", "pgas_fetch_add/fetch_add/int64", "pgas_fetch_add/window/int64",
     "oshmem_fetch_add/int64", None),
    ("64 rput 8 B in flight, then quiet (per put)", "pgas_put_rate/rput_quiet/8",
     "pgas_put_rate/window/8", None, None),
    ("rput 1 MiB + wait", f"pgas_put_bandwidth/rput/{MIB}", f"pgas_put_bandwidth/window/{MIB}",
     f"oshmem_put_bandwidth/{MIB}", f"pgas_memcpy_bandwidth/{MIB}"),
    ("rget 1 MiB + wait", f"pgas_get_bandwidth/rget/{MIB}", f"pgas_get_bandwidth/window/{MIB}",
     f"oshmem_get_bandwidth/{MIB}", f"pgas_memcpy_bandwidth/{MIB}"),
)
# What the raw window rows measure (for the report's text).
PGAS_WINDOW_TEXT = {
    "pgas_put_latency/window/8": "put 8 B + flush",
    "pgas_get_latency/window/8": "get 8 B + flush",
    "pgas_fetch_add/window/int64": "fetch_and_op sum + flush",
    "pgas_put_rate/window/8": "64 puts + flush",
    f"pgas_put_bandwidth/window/{MIB}": "put 1 MiB + flush",
    f"pgas_get_bandwidth/window/{MIB}": "get 1 MiB + flush",
}

# The kinds of window of the rma_* families, and the Open MPI one-sided component each
# family's MPI process uses by default (Open MPI 4.1.4 on one node; see bench/README.md):
# - allocate: osc/sm, direct load/store, Open MPI's fastest path (like --mpi-osc);
# - dynamic, create: osc/sm refuses MPI_Win_create_dynamic and MPI_Win_create
#   (MPI_ERR_WIN), so these take osc/rdma, the component Open MPI itself picks for them
#   here (over the vader BTL: CMA single copy for put/get, active messages for atomics).
#   osc/pt2pt also works (slower for latencies, faster for streams of 8-byte puts); osc/ucx
#   has no usable transport here (hundreds of µs per operation).
RMA_KINDS = ("allocate", "dynamic", "create")
# The latency benches of micro/rma_bench.cpp (the MPI peer is "mpi_" + name), the put rate,
# and the "small operations" of the user-memory target; batches as in lockstep.hpp.
RMA_LATENCIES = (
    ("put 8 B", "rma_put_latency/{k}/8"),
    ("get 8 B", "rma_get_latency/{k}/8"),
    ("fetch_and_op int64 sum", "rma_fetch_and_op/{k}"),
    ("compare_and_swap int64", "rma_compare_and_swap/{k}"),
    ("accumulate 1 double sum", "rma_accumulate_latency/{k}/1"),
    ("accumulate 1024 doubles sum", "rma_accumulate_latency/{k}/1024"),
    ("get_accumulate int64 sum", "rma_get_accumulate/{k}"),
)
RMA_RATE = ("put rate 8 B", "rma_put_rate/{k}/8")
RMA_SMALL = tuple(x for x in RMA_LATENCIES if not x[1].endswith("/1024"))
RMA_IN_FLIGHT = 64
RMA_ACC = 1024

# The rma_attached family (micro/rma_bench.cpp, issue 18): fetch_and_op + flush on a
# std::vector attached to a dynamic window, next to an allocate window in the same process.
# Rows: (target label, target), (memory label, memory).
ATTACHED_TARGETS = (("next rank", "next"), ("every rank on rank 0's element", "rank0"))
ATTACHED_MEMORY = (("4 KiB attached (moved into shared memory)", "page"),
                   ("64 B attached (the owner's agent)", "small"))

# The benches of the sync family (the MPI peer is "mpi_" + name) and the target of each at
# 2 ranks on their own cores, as a time ratio to Open MPI (osc/sm) in the same run. With more
# ranks than cores the target is a ratio of at most 1 (no worse than Open MPI oversubscribed
# the same way). With more ranks than cores every round must also stay under
# SYNC_ROUND_LIMIT_NS: a call that needs every rank scheduled costs a few context switches
# (µs), a wait that spins through its time slices instead of yielding costs milliseconds.
# The slowdown against the run's rank count on own cores is reported, not judged (fence and
# PSCW at 2 ranks on 2 cores cost ~100 ns, far below any context switch).
SYNC_PATTERNS = (
    ("fence pair (empty epoch)", "rma_sync_fence_pair", 0.5),
    ("PSCW round (ring neighbours)", "rma_sync_pscw_round", 0.5),
    ("lock + unlock, exclusive (next rank)", "rma_sync_lock_exclusive", 0.6),
    ("lock + unlock, shared (next rank)", "rma_sync_lock_shared", 0.6),
    ("lock_all + unlock_all", "rma_sync_lock_all", 0.6),
    ("empty flush (inside lock_all)", "rma_sync_flush", 1.0),
)
SYNC_ROUND_LIMIT_NS = 100_000.0

# The targets of --transport mpi (the MPI transport's network path, gbench.NETWORK_MPIRUN):
# oneside's time at most 1.10x raw MPI's for 8-byte operations (issue + flush),
# its bandwidth at least 0.98x raw MPI's at 1 MiB (64 in flight, then flush). The 8-byte
# target applies to every 8-byte latency row (put, get, the atomics, accumulate of one
# double). Raw MPI is a dynamic window under lock_all (what the transport does: one dynamic
# window for the job, MPI_Put/MPI_Get + MPI_Win_flush) and, for reference, an
# MPI_Win_allocate window.
NETWORK_LATENCY_LIMIT = 1.10
NETWORK_BANDWIDTH_LIMIT = 0.98
NETWORK_BANDWIDTH_BYTES = MIB
NETWORK_BASELINES = ("dynamic", "allocate")
# The rows of its table: the 8-byte latencies of the rma families, and put/get bandwidth at
# NETWORK_BANDWIDTH_BYTES (a row is a bandwidth row when its pattern is a *_bandwidth bench).
NETWORK_ROWS = (*RMA_SMALL[:2],
                *((f"{op} {NETWORK_BANDWIDTH_BYTES // MIB} MiB bandwidth",
                   f"rma_{op}_bandwidth/{{k}}/{NETWORK_BANDWIDTH_BYTES}") for op in ("put", "get")),
                *RMA_SMALL[2:])


# ---- command line ---------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Run oneside's micro-benchmarks interleaved with their MPI peers and "
        "write the ratio report (report.md, medians.csv).")
    p.add_argument("--build-dir", required=True, type=Path,
                   help="a configured and built oneside build directory")
    p.add_argument("--transport", choices=("shm", "mpi"), default="shm",
                   help="shm (default): oneside under oneside-run, the MPI peers on one node "
                   "(osc sm/rdma); mpi: both under mpirun on the MPI transport's network path "
                   "(btl tcp, osc ucx over UCX_TLS=tcp,self, unbound ranks; oneside with "
                   "ONESIDE_TRANSPORT=mpi), compared with the MPI transport's targets")
    p.add_argument("--ranks", type=int, nargs="+", default=None,
                   help="rank counts to run (default: 2 4; 2 with --transport mpi)")
    p.add_argument("--repetitions", type=int, default=3,
                   help="interleaved runs of each suite per rank count (default: 3)")
    p.add_argument("--out", type=Path, default=Path("bench-results"),
                   help="output directory (default: ./bench-results)")
    p.add_argument("--min-time", type=float, default=0.25,
                   help="--benchmark_min_time of every run, seconds (default: 0.25)")
    p.add_argument("--filter", default=None,
                   help="--benchmark_filter for both suites (MPI names start with mpi_); "
                   "each suite then runs once per repetition instead of once per family, "
                   "every MPI run with --mpi-osc (MPI RMA window benches of dynamic and create "
                   "windows need another component than sm: select them with --families)")
    p.add_argument("--timeout", type=int, default=900,
                   help="seconds after which one run is killed (default: 900)")
    p.add_argument("--oneside-env", action="append", default=[], metavar="ONESIDE_NAME=VALUE",
                   help="a setting for oneside's ranks only (repeatable), e.g. "
                   "ONESIDE_MPI_ATTACH=0 to measure the MPI transport's message path; the "
                   "report names it")
    p.add_argument("--no-mpi", action="store_true",
                   help="run only the oneside suite (no MPI peers, no MPI ratios)")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing: rebuild report.md and medians.csv from <out>/raw")
    p.add_argument("--mpirun", default="mpirun", help="the MPI launcher (default: mpirun)")
    p.add_argument("--oshrun", default="oshrun",
                   help="the OpenSHMEM launcher of oshmem_bench, the pgas family's peer "
                   "(default: oshrun)")
    p.add_argument("--no-oshmem", action="store_true",
                   help="do not run the OpenSHMEM peer (oshmem_bench) with the pgas family")
    p.add_argument("--mpi-osc", default="sm",
                   help="Open MPI one-sided component for the RMA peers, passed as --mca osc "
                   "NAME (default: sm, direct load/store on one node, the strongest peer; "
                   "'default' leaves the choice to Open MPI); also the component of the "
                   "rma_allocate family")
    p.add_argument("--mpi-osc-dynamic", default=RMA_OSC_DEFAULT["dynamic"],
                   help="Open MPI one-sided component of the rma_dynamic family "
                   "(MPI_Win_create_dynamic; default: rdma, as osc/sm refuses such windows)")
    p.add_argument("--mpi-osc-create", default=RMA_OSC_DEFAULT["create"],
                   help="Open MPI one-sided component of the rma_create family "
                   "(MPI_Win_create; default: rdma, as osc/sm refuses such windows)")
    p.add_argument("--families", nargs="+", choices=list(GROUPS), default=None,
                   help="run only these benchmark families (default: all but the OSU "
                   f"sweeps {' '.join(SWEEP_FAMILIES)}; with --transport mpi: "
                   f"{' '.join(NETWORK_FAMILIES)})")
    a = p.parse_args()
    for kv in a.oneside_env:
        name, eq, _ = kv.partition("=")
        if not eq or not name.startswith("ONESIDE_"):
            p.error(f"--oneside-env {kv}: expected ONESIDE_NAME=VALUE")
    if a.ranks is None:
        a.ranks = [2] if a.transport == "mpi" else [2, 4]
    if a.families is None and a.transport == "mpi" and not a.filter:
        a.families = list(NETWORK_FAMILIES)
    elif a.families is None and not a.filter:
        a.families = [g for g in GROUPS if g not in SWEEP_FAMILIES]
    if a.repetitions < 1:
        p.error("--repetitions must be at least 1")
    if any(n < 1 for n in a.ranks):
        p.error("--ranks must be positive")
    return a


# ---- the report -----------------------------------------------------------------------


def fmt_time(ns: float | None) -> str:
    if ns is None:
        return "n/a"
    if ns < 1e3:
        return f"{ns:.0f} ns" if ns >= 100 else f"{ns:.1f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.3g} µs"
    return f"{ns / 1e6:.3g} ms"


def fmt_rate(ns: float | None) -> str:
    """Operations per second of an operation taking `ns`."""
    if ns is None:
        return "n/a"
    rate = 1e9 / ns
    return f"{rate / 1e6:.3g} Mop/s" if rate >= 1e6 else f"{rate / 1e3:.3g} kop/s"


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
        self.network = a.transport == "mpi"  # both suites on the MPI transport's network path

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
        """As the oneside run recorded it (its runtime's rule), else ranks > cores. On the
        network path every rank is a node of its own to the runtime, so ranks > cores."""
        if self.network:
            return n > self.cores
        flag = self.ctx.get(("oneside", n), {}).get("oversubscribed")
        return flag == "yes" if flag in ("yes", "no") else n > self.cores

    def numeric_head(self, columns: list[str]) -> None:
        """The head and rule of a table whose columns are all right-aligned numbers."""
        self.out("|" + "".join(f" {c} |" for c in columns))
        self.out("|" + "---:|" * len(columns))

    def out(self, line: str = "") -> None:
        self.lines.append(line)

    def header(self) -> None:
        o = self.ctx.get(("oneside", self.a.ranks[0]), {})
        m = self.ctx.get(("mpi", self.a.ranks[0]), {})
        self.out("# oneside micro-benchmarks: ratios")
        self.out()
        osc = next((r.osc for r in self.records if r.suite == "mpi" and r.osc
                    and not r.group.startswith("rma_")), family_osc(self.a, "latency"))
        peers = ""
        if self.has_mpi:
            peers = (f"; peers: {m.get('mpi_library', 'MPI')}, RMA with "
                     + ("Open MPI's default osc" if osc == "default" else f"`--mca osc {osc}`"))
            if any(r.group.startswith("rma_") for r in self.records):
                peers += ("; RMA window families: " + ", ".join(
                    f"{k} {self.osc_label(k)}" for k in RMA_KINDS
                    if any(r.group == f"rma_{k}" for r in self.records)))
        self.out(f"- commit `{o.get('git_commit', 'unknown')}`, oneside "
                 f"{o.get('oneside_version', '?')}, transport {o.get('transport', '?')}"
                 + peers)
        self.out(f"- host `{o.get('host_name', '?')}`: {self.cores} cores, "
                 f"{o.get('mhz_per_cpu', '?')} MHz; {datetime.date.today().isoformat()}")
        self.out(f"- {self.a.repetitions} repetitions per rank count; in each, every family "
                 "(barrier, allreduce, …) runs as a oneside process and an MPI process (pgas: an "
                 "OpenSHMEM process, when it ran) back to back, alternating which goes first; "
                 "figures are medians over the "
                 "repetitions, ratios are medians of the per-repetition ratios (range given); "
                 f"--benchmark_min_time={self.a.min_time}")
        self.out("- every figure is per operation, the slowest rank's (each batch of K "
                 "operations is timed on every rank and counts as the maximum)")
        settings = sorted({r.env for r in self.records if r.suite == "oneside" and r.env})
        if settings:
            self.out("- oneside's ranks ran with " + "; ".join(f"`{e}`" for e in settings)
                     + " (--oneside-env)")
        shmem = next((c for (sn, _), c in self.ctx.items() if sn == "oshmem"), None)
        if shmem is not None:
            self.out(f"- pgas family's peer: {shmem.get('shmem_library', 'OpenSHMEM')} "
                     f"(`oshmem_bench` under `oshrun {' '.join(OSHMEM_OSHRUN)}`, the same "
                     "placement policy), a separate launch right before or after oneside's "
                     "pgas process in each repetition")
        if self.network:
            self.out("- MPI transport on its network path: both suites under `mpirun "
                     + " ".join(NETWORK_MPIRUN) + f" --mca osc {NETWORK_OSC}`, oneside with "
                     "`-x ONESIDE_TRANSPORT=mpi` (every peer through MPI); ranks unbound")
        else:
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

    def transport_name(self, n: int) -> str:
        return self.ctx.get(("oneside", n), {}).get("transport", "shm")

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
                text = (f"{op} {fmt_size(size)}, {self.transport_name(n)}: "
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
            if ot is None and mt is None:
                continue  # the barrier family did not run (--families)
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

    # ---- the rma window family (issue 3) ------------------------------------------------

    def combine(self, n: int, keys: list[tuple[str, str]], f) -> pair | None:
        """f(time of each key) computed per repetition (over the repetitions every key has),
        then the median and range of those values."""
        rs = [self.get(s, n, b) for s, b in keys]
        if not rs or any(r is None for r in rs):
            return None
        reps = sorted(set.intersection(*(set(r.by_rep) for r in rs)))
        xs = [f(*[r.by_rep[i] for r in rs]) for i in reps]
        xs = [x for x in xs if x is not None]
        return pair(statistics.median(xs), min(xs), max(xs), xs) if xs else None

    def osc_of(self, kind: str) -> str:
        """The one-sided component the MPI runs of the rma_<kind> family used."""
        for rec in self.records:
            if rec.suite == "mpi" and rec.group == f"rma_{kind}" and rec.osc:
                return rec.osc
        return family_osc(self.a, f"rma_{kind}")

    def osc_label(self, kind: str) -> str:
        osc = self.osc_of(kind)
        return "Open MPI's default osc" if osc == "default" else f"osc/{osc}"

    def has_rma(self, n: int) -> bool:
        return any(k[1] == n and k[0] == "oneside" and r.family.startswith("rma_")
                   and not r.family.startswith("rma_memcpy_bandwidth")
                   and not r.family.startswith("rma_sync_")
                   and not r.family.startswith("rma_attached_") for k, r in self.r.items())

    def rma_sizes(self, n: int, op: str) -> list[int]:
        return sorted({r.bytes for (s, k, _), r in self.r.items()
                       if k == n and r.family in (f"rma_{op}_bandwidth",
                                                  f"mpi_rma_{op}_bandwidth") and r.bytes})

    def best_peer(self, n: int, ours: tuple[str, str], op: str, size: int) -> pair | None:
        """Bandwidth ratio of `ours` to the best MPI peer of this size (any kind of window),
        per repetition."""
        peers = [("mpi", f"mpi_rma_{op}_bandwidth/{k}/{size}") for k in RMA_KINDS]
        peers = [p for p in peers if self.get(p[0], n, p[1]) is not None]
        if not peers:
            return None
        return self.combine(n, [ours, *peers], lambda o, *m: min(m) / o)

    def rma_latency(self, n: int) -> None:
        mpi = self.has_mpi
        self.out("### RMA windows: latency (time per operation; issue + flush(target), "
                 "under lock_all, to the next rank)")
        self.out()
        self.out("Time ratios are oneside / MPI (below 1: oneside is faster); the put rate "
                 "row gives operations/s and oneside / MPI of those (above 1: oneside is "
                 "faster). MPI components: "
                 + ", ".join(f"{k} windows {self.osc_label(k)}" for k in RMA_KINDS) + ".")
        self.out()
        head, rule = "| operation |", "|---|"
        for k in RMA_KINDS:
            head += f" {k}: oneside |"
            rule += "---:|"
            if mpi:
                head += f" MPI ({self.osc_label(k)}) | oneside / MPI |"
                rule += "---:|---:|"
        self.out(head)
        self.out(rule)
        for label, pattern in RMA_LATENCIES:
            row = f"| {label} |"
            for k in RMA_KINDS:
                ob = pattern.format(k=k)
                row += f" {fmt_time(self.time('oneside', n, ob))} |"
                if mpi:
                    p = self.paired(n, ("oneside", ob), ("mpi", "mpi_" + ob))
                    row += f" {fmt_time(self.time('mpi', n, 'mpi_' + ob))} | {fmt_pair(p)} |"
            self.out(row)
        label, pattern = RMA_RATE
        row = f"| {label} (ops/s) |"
        for k in RMA_KINDS:
            ob = pattern.format(k=k)
            row += f" {fmt_rate(self.time('oneside', n, ob))} |"
            if mpi:
                p = self.paired(n, ("mpi", "mpi_" + ob), ("oneside", ob))
                row += f" {fmt_rate(self.time('mpi', n, 'mpi_' + ob))} | {fmt_pair(p)} |"
        self.out(row)
        self.out()

    def rma_bandwidth(self, n: int) -> None:
        mpi = self.has_mpi
        for op in ("put", "get"):
            sizes = self.rma_sizes(n, op)
            if not sizes:
                continue
            self.out(f"### RMA windows: {op} bandwidth (rounds of {RMA_IN_FLIGHT} operations "
                     "then one flush; every rank at once)")
            self.out()
            self.numeric_head(
                ["size", "memcpy", *RMA_KINDS,
                 *([f"MPI {k} ({self.osc_label(k)})" for k in RMA_KINDS] if mpi else []),
                 "allocate vs memcpy", *(["allocate vs best MPI"] if mpi else []),
                 "dynamic vs allocate", *(["create vs best MPI"] if mpi else [])])
            for size in sizes:
                mc = ("oneside", f"rma_memcpy_bandwidth/{size}")
                ours = {k: ("oneside", f"rma_{op}_bandwidth/{k}/{size}") for k in RMA_KINDS}
                row = f"| {fmt_size(size)} | {fmt_bw(size, self.time(mc[0], n, mc[1]))} |"
                for k in RMA_KINDS:
                    row += f" {fmt_bw(size, self.time('oneside', n, ours[k][1]))} |"
                if mpi:
                    for k in RMA_KINDS:
                        theirs = f"mpi_rma_{op}_bandwidth/{k}/{size}"
                        row += f" {fmt_bw(size, self.time('mpi', n, theirs))} |"
                row += f" {fmt_pair(self.paired(n, mc, ours['allocate']))} |"
                if mpi:
                    row += f" {fmt_pair(self.best_peer(n, ours['allocate'], op, size))} |"
                row += f" {fmt_pair(self.paired(n, ours['allocate'], ours['dynamic']))} |"
                if mpi:
                    row += f" {fmt_pair(self.best_peer(n, ours['create'], op, size))} |"
                self.out(row)
            self.out()
        self.out("Bandwidth ratios: above 1 means the first named moves bytes faster; "
                 "\"best MPI\" is the fastest of the MPI peers at that size in the same "
                 "repetition.")
        self.out()

    def rma_shifted(self, n: int) -> None:
        """The bandwidth benches with the destination of the bytes 8 bytes past a page
        boundary and the source on one (runtime/copy.hpp says why it gets its own table)."""
        sizes = sorted({r.bytes for (s, k, _), r in self.r.items()
                        if k == n and r.family == "rma_memcpy_bandwidth_shifted" and r.bytes})
        if not sizes:
            return
        mpi = self.has_mpi
        self.out("### RMA windows: shifted bandwidth (allocate window; the destination of the "
                 "bytes 8 bytes past a page boundary, the source on one)")
        self.out()
        self.numeric_head(
            ["size", "memcpy", "put", "get",
             *([f"MPI put ({self.osc_label('allocate')})", "MPI get"] if mpi else []),
             "put vs memcpy", "get vs memcpy", *(["put vs MPI", "get vs MPI"] if mpi else [])])
        for size in sizes:
            mc = ("oneside", f"rma_memcpy_bandwidth_shifted/{size}")
            ours = {op: ("oneside", f"rma_{op}_bandwidth_shifted/allocate/{size}")
                    for op in ("put", "get")}
            theirs = {op: ("mpi", f"mpi_rma_{op}_bandwidth_shifted/allocate/{size}")
                      for op in ("put", "get")}
            row = f"| {fmt_size(size)} | {fmt_bw(size, self.time(mc[0], n, mc[1]))} |"
            for op in ("put", "get"):
                row += f" {fmt_bw(size, self.time('oneside', n, ours[op][1]))} |"
            if mpi:
                for op in ("put", "get"):
                    row += f" {fmt_bw(size, self.time('mpi', n, theirs[op][1]))} |"
            for op in ("put", "get"):
                row += f" {fmt_pair(self.paired(n, mc, ours[op]))} |"
            if mpi:
                for op in ("put", "get"):
                    row += f" {fmt_pair(self.paired(n, theirs[op], ours[op]))} |"
            self.out(row)
        self.out()
        self.out("glibc's memcpy moves these bytes with `rep movsb`, which some CPUs (AMD Zen "
                 "3/4) run many times slower when the destination is a few bytes ahead of the "
                 "source; oneside's data path copies with a vector loop there instead.")
        self.out()

    def scaling(self, n: int, suite_name: str, kind: str) -> tuple[pair | None, float | None,
                                                                    float | None]:
        """(aggregate speedup of every rank over one rank, per-op time one, per-op time all);
        kind "local" is the machine's ceiling (rma_add_scaling: no window)."""
        prefix = "" if suite_name == "oneside" else "mpi_"
        bench = ("rma_add_scaling" if kind == "local"
                 else f"{prefix}rma_accumulate_scaling/{kind}")
        one = (suite_name, f"{bench}/one")
        every = (suite_name, f"{bench}/all")
        p = self.combine(n, [one, every], lambda t1, tn: n * t1 / tn)
        return p, self.time(one[0], n, one[1]), self.time(every[0], n, every[1])

    def rma_scaling(self, n: int) -> None:
        mpi = self.has_mpi
        ideal = min(n, self.cores)
        self.out(f"### RMA windows: accumulate scaling ({RMA_ACC} doubles, sum, into the "
                 f"origin's own block of rank 0's window, then flush; 1 origin vs all {n})")
        self.out()
        self.out(f"Per-operation times are the wall time of a batch (first start to last end "
                 f"over the ranks) over the accumulates of one origin; speedup = aggregate "
                 f"operations/s of {n} origins over that of 1 origin (ideal here: "
                 f"{ideal}× = min(ranks, cores); ≈1× means the origins take turns). The "
                 f"\"local adds\" row is the machine's own ceiling: the same additions into "
                 f"private memory, no window, no communication.")
        self.out()
        head = "| window | 1 origin | all origins | speedup |"
        rule = "|---|---:|---:|---:|"
        if mpi:
            head += " MPI 1 origin | MPI all | MPI speedup |"
            rule += "---:|---:|---:|"
        self.out(head)
        self.out(rule)
        p, t1, tn = self.scaling(n, "oneside", "local")
        if p is not None:
            self.out(f"| local adds (no RMA) | {fmt_time(t1)} | {fmt_time(tn)} | {fmt_pair(p)} |"
                     + (" | | |" if mpi else ""))
        for k in RMA_KINDS:
            p, t1, tn = self.scaling(n, "oneside", k)
            row = f"| {k} | {fmt_time(t1)} | {fmt_time(tn)} | {fmt_pair(p)} |"
            if mpi:
                q, m1, mn = self.scaling(n, "mpi", k)
                row += (f" {fmt_time(m1)} | {fmt_time(mn)} | {fmt_pair(q)} "
                        f"({self.osc_label(k)}) |")
            self.out(row)
        self.out()

    def verdict(self, ok: bool | None, p: pair | None = None, holds=None) -> str:
        if ok is None:
            return "n/a"
        text = "met" if ok else "**not met**"
        if p is not None and holds is not None:
            within = sum(1 for v in p.values if holds(v))
            text += f" (within the target in {within} of {len(p.values)} runs)"
        return text

    def check_rma_targets(self) -> list[tuple[str, str, str]]:
        rows: list[tuple[str, str, str]] = []
        mpi = self.has_mpi
        for n in self.a.ranks:
            if not self.has_rma(n):
                continue
            at = f"{n} ranks" + (" (oversubscribed)" if self.is_oversubscribed(n) else "")
            sm = self.osc_label("allocate")
            # 1. Latencies on allocate windows, against Open MPI on allocate windows.
            for label, pattern in RMA_LATENCIES:
                ob = pattern.format(k="allocate")
                p = self.paired(n, ("oneside", ob), ("mpi", "mpi_" + ob)) if mpi else None
                rows.append((f"{at}: {label} ≤ 0.75× Open MPI ({sm}), allocate window",
                             "n/a" if p is None else
                             f"{fmt_time(self.time('oneside', n, ob))} vs "
                             f"{fmt_time(self.time('mpi', n, 'mpi_' + ob))}: "
                             f"{p.median:.3f}× (runs: {fmt_range(p)})",
                             self.verdict(None if p is None else p.median <= 0.75, p,
                                          lambda v: v <= 0.75)))
            # 2. 8-byte put rate.
            ob = RMA_RATE[1].format(k="allocate")
            p = self.paired(n, ("mpi", "mpi_" + ob), ("oneside", ob)) if mpi else None
            rows.append((f"{at}: 8 B put rate ≥ 1.5× Open MPI's ({sm}), allocate window",
                         "n/a" if p is None else
                         f"{fmt_rate(self.time('oneside', n, ob))} vs "
                         f"{fmt_rate(self.time('mpi', n, 'mpi_' + ob))}: {p.median:.3f}× "
                         f"(runs: {fmt_range(p)})",
                         self.verdict(None if p is None else p.median >= 1.5, p,
                                      lambda v: v >= 1.5)))
            # 3. Bandwidth from 8 KiB up: best peer and 0.9x memcpy.
            for op in ("put", "get"):
                sizes = [x for x in self.rma_sizes(n, op) if x >= 8 * 1024]
                ours = {x: ("oneside", f"rma_{op}_bandwidth/allocate/{x}") for x in sizes}
                if mpi:
                    ps = {x: self.best_peer(n, ours[x], op, x) for x in sizes}
                    rows.append((f"{at}: {op} bandwidth ≥ the best peer at every size from "
                                 "8 KiB (allocate window)",
                                 *self.worst_of(ps, lambda v: v >= 1.0, low_is_bad=True)))
                ps = {x: self.paired(n, ("oneside", f"rma_memcpy_bandwidth/{x}"), ours[x])
                      for x in sizes}
                rows.append((f"{at}: {op} bandwidth ≥ 0.9× memcpy at every size from 8 KiB "
                             "(allocate window)",
                             *self.worst_of(ps, lambda v: v >= 0.9, low_is_bad=True)))
            # 4. Dynamic windows over oneside's own memory within 1.5x of allocate windows.
            ps = {}
            for label, pattern in (*RMA_LATENCIES, RMA_RATE):
                ps[label] = self.paired(n, ("oneside", pattern.format(k="dynamic")),
                                        ("oneside", pattern.format(k="allocate")))
            rows.append((f"{at}: dynamic window (memory from oneside's allocations) within "
                         "1.5× of allocate: latencies and put rate (time dynamic / allocate)",
                         *self.worst_of(ps, lambda v: v <= 1.5, low_is_bad=False)))
            for op in ("put", "get"):
                sizes = [x for x in self.rma_sizes(n, op) if x >= 8 * 1024]
                ps = {fmt_size(x): self.paired(n, ("oneside", f"rma_{op}_bandwidth/dynamic/{x}"),
                                               ("oneside", f"rma_{op}_bandwidth/allocate/{x}"))
                      for x in sizes}
                rows.append((f"{at}: dynamic window within 1.5× of allocate: {op} bandwidth "
                             "from 8 KiB (time dynamic / allocate)",
                             *self.worst_of(ps, lambda v: v <= 1.5, low_is_bad=False)))
            # 5. Windows over user memory: small ops no slower than Open MPI's dynamic
            #    windows; bandwidth at least the best peer's.
            if mpi:
                dyn = self.osc_label("dynamic")
                ps = {label: self.paired(n, ("oneside", pattern.format(k="create")),
                                         ("mpi", "mpi_" + pattern.format(k="dynamic")))
                      for label, pattern in RMA_SMALL}
                rows.append((f"{at}: create window over user memory no slower than Open MPI's "
                             f"dynamic window ({dyn}) for small operations (time ratio)",
                             *self.worst_of(ps, lambda v: v <= 1.0, low_is_bad=False)))
                for op in ("put", "get"):
                    sizes = [x for x in self.rma_sizes(n, op) if x >= 8 * 1024]
                    ps = {x: self.best_peer(n, ("oneside", f"rma_{op}_bandwidth/create/{x}"),
                                            op, x) for x in sizes}
                    rows.append((f"{at}: create window {op} bandwidth ≥ the best peer at every "
                                 "size from 8 KiB",
                                 *self.worst_of(ps, lambda v: v >= 1.0, low_is_bad=True)))
            # 6. Accumulate scaling: a speedup of 0.75 x min(ranks, cores) over one origin.
            #    When the machine itself (local adds, same run) scales less than that, the
            #    verdict is only "inconclusive" if oneside keeps up with the machine.
            ideal = min(n, self.cores)
            need = 0.75 * ideal
            local, _, _ = self.scaling(n, "oneside", "local")
            for k in RMA_KINDS:
                p, t1, tn = self.scaling(n, "oneside", k)
                measured = "n/a" if p is None else (
                    f"{fmt_pair(p)} aggregate speedup of {n} origins over 1 "
                    f"({fmt_time(t1)} → {fmt_time(tn)} per op; runs: {fmt_range(p)})")
                if local is not None:
                    measured += f"; machine ceiling (local adds): {fmt_pair(local)}"
                if mpi:
                    q, _, _ = self.scaling(n, "mpi", k)
                    if q is not None:
                        measured += f"; Open MPI ({self.osc_label(k)}): {fmt_pair(q)}"
                verdict = self.verdict(None if p is None else p.median >= need, p,
                                       lambda v: v >= need)
                if (p is not None and p.median < need and local is not None
                        and local.median < need and p.median >= 0.75 * local.median):
                    verdict = (f"inconclusive (the machine itself scaled {fmt_pair(local)}; "
                               f"oneside kept {p.median / local.median:.0%} of that)")
                rows.append((f"{at}: accumulates of {n} ranks into disjoint blocks of one "
                             f"target scale ({k} window; speedup ≥ {need:.2g}× = 0.75 × "
                             f"min(ranks, cores))", measured, verdict))
        return rows

    # ---- the MPI transport against raw MPI RMA (--transport mpi) ---------------------------

    def network_ratio(self, n: int, pattern: str, base: str) -> pair | None:
        """oneside's allocate window against the MPI peer's `base` window: a time ratio for a
        latency row, a bandwidth ratio (oneside / MPI) for a bandwidth row."""
        ours = ("oneside", pattern.format(k="allocate"))
        theirs = ("mpi", "mpi_" + pattern.format(k=base))
        if "_bandwidth/" in pattern:
            return self.paired(n, theirs, ours)
        return self.paired(n, ours, theirs)

    def network_figure(self, suite_name: str, n: int, bench: str) -> str:
        t = self.time(suite_name, n, bench)
        return fmt_bw(NETWORK_BANDWIDTH_BYTES, t) if "_bandwidth/" in bench else fmt_time(t)

    def network_targets(self) -> None:
        if not self.has_mpi:
            return
        ranks = [n for n in self.a.ranks if self.has_rma(n)]
        if not ranks:
            return
        osc = self.osc_label("allocate")
        self.out("## Targets (MPI transport vs raw MPI RMA)")
        self.out()
        self.out("oneside: `rma::window::allocate` (its memory lives in the MPI transport's one "
                 "dynamic window), lock_all, to the next rank. Raw MPI on the same path "
                 f"({osc}): an `MPI_Win_create_dynamic` window with one `MPI_Win_attach` under "
                 "`MPI_Win_lock_all`, `MPI_Put`/`MPI_Get` + `MPI_Win_flush` (what the transport "
                 "does: the matching baseline), and an `MPI_Win_allocate` window. Latency rows: "
                 "issue + flush, time ratio oneside / MPI (below 1: oneside is faster), target "
                 f"≤ {NETWORK_LATENCY_LIMIT:.2f}× for every 8-byte operation. Bandwidth rows: "
                 f"{RMA_IN_FLIGHT} in flight then flush, bandwidth ratio oneside / MPI (above 1: "
                 f"oneside is faster), target ≥ {NETWORK_BANDWIDTH_LIMIT:.2f}×. Ratios are "
                 "medians of the per-repetition ratios (range over runs given); verdicts use "
                 "the median.")
        self.out()
        for n in ranks:
            self.out(f"### {n} ranks" + (f" on {self.cores} cores (oversubscribed)"
                                          if self.is_oversubscribed(n) else ""))
            self.out()
            head, rule = "| operation | oneside | target |", "|---|---:|---:|"
            for base in NETWORK_BASELINES:
                head += (f" MPI {base} window | oneside / MPI {base} | range over runs | "
                         "verdict |")
                rule += "---:|---:|---:|---|"
            self.out(head)
            self.out(rule)
            for label, pattern in NETWORK_ROWS:
                bandwidth = "_bandwidth/" in pattern
                limit = NETWORK_BANDWIDTH_LIMIT if bandwidth else NETWORK_LATENCY_LIMIT
                holds = ((lambda v, lim=limit: v >= lim) if bandwidth
                         else (lambda v, lim=limit: v <= lim))
                row = (f"| {label} | "
                       f"{self.network_figure('oneside', n, pattern.format(k='allocate'))} | "
                       f"{'≥' if bandwidth else '≤'} {limit:.2f}× |")
                for base in NETWORK_BASELINES:
                    p = self.network_ratio(n, pattern, base)
                    row += (f" {self.network_figure('mpi', n, 'mpi_' + pattern.format(k=base))} "
                            f"| {fmt_pair(p)} | {fmt_range(p)} | "
                            f"{self.verdict(None if p is None else holds(p.median), p, holds)} |")
                self.out(row)
            self.out()

    # ---- window synchronization (the sync family) ------------------------------------------

    def has_sync(self, n: int) -> bool:
        return any(self.get("oneside", n, b) is not None or self.get("mpi", n, "mpi_" + b)
                   is not None for _, b, _ in SYNC_PATTERNS)

    def sync_osc_label(self) -> str:
        osc = next((rec.osc for rec in self.records
                    if rec.suite == "mpi" and rec.group in ("sync", "all") and rec.osc),
                   family_osc(self.a, "sync"))
        return "Open MPI's default osc" if osc == "default" else f"osc/{osc}"

    def sync_limit(self, n: int, limit_at_two: float) -> float | None:
        """The time-ratio target of a sync pattern at n ranks: the pattern's own at 2 ranks on
        their own cores, 1 when oversubscribed, none otherwise."""
        if self.is_oversubscribed(n):
            return 1.0
        return limit_at_two if n == 2 else None

    def sync_base(self, n: int) -> int | None:
        """For an oversubscribed rank count: the largest rank count of this report (at least
        2) on own cores with oneside sync figures, to measure the slowdown against."""
        if not self.is_oversubscribed(n):
            return None
        bases = [k for k in self.a.ranks if 2 <= k < n and not self.is_oversubscribed(k)
                 and any(self.get("oneside", k, b) is not None for _, b, _ in SYNC_PATTERNS)]
        return max(bases) if bases else None

    def sync_slowdown(self, n: int, base: int, bench: str) -> pair | None:
        """oneside's time at n ranks over its time at `base` ranks (medians: the rank
        counts run one after the other, so there are no per-repetition pairs)."""
        t, b = self.time("oneside", n, bench), self.time("oneside", base, bench)
        if t is None or b is None or b <= 0:
            return None
        x = t / b
        return pair(x, x, x, [x])

    def check_sync_targets(self) -> list[tuple[str, str, str]]:
        rows: list[tuple[str, str, str]] = []
        osc = self.sync_osc_label()
        for n in self.a.ranks:
            if not self.has_sync(n):
                continue
            over = self.is_oversubscribed(n)
            at = f"{n} ranks on {self.cores} cores" + (" (oversubscribed)" if over else "")
            if self.has_mpi:
                for label, bench, limit_at_two in SYNC_PATTERNS:
                    limit = self.sync_limit(n, limit_at_two)
                    if limit is None:
                        continue
                    p = self.paired(n, ("oneside", bench), ("mpi", "mpi_" + bench))
                    name = (f"{at}: {label} ≤ {limit:g}× Open MPI ({osc})"
                            + (" oversubscribed the same way" if over else ""))
                    measured = ("n/a" if p is None else
                                f"{fmt_time(self.time('oneside', n, bench))} vs "
                                f"{fmt_time(self.time('mpi', n, 'mpi_' + bench))}: "
                                f"{p.median:.3f}× (runs: {fmt_range(p)})")
                    rows.append((name, measured,
                                 self.verdict(None if p is None else p.median <= limit, p,
                                              lambda v, lim=limit: v <= lim)))
            times = {label: self.time("oneside", n, bench) for label, bench, _ in SYNC_PATTERNS}
            have = {k: t for k, t in times.items() if t is not None}
            if have and n > self.cores:
                worst = max(have, key=lambda k: have[k])
                misses = [k for k, t in have.items() if t >= SYNC_ROUND_LIMIT_NS]
                every = ", ".join(f"{k} {fmt_time(t)}" for k, t in have.items())
                rows.append((f"{at}: no oneside sync pattern slows down by orders of magnitude "
                             f"(every round under {fmt_time(SYNC_ROUND_LIMIT_NS)}; a wait that "
                             "spins through its time slices costs milliseconds)",
                             f"worst {fmt_time(have[worst])} at {worst}; all: {every}",
                             "met" if not misses else
                             f"**not met** (misses: {', '.join(misses)})"))
        return rows

    def sync(self, n: int) -> None:
        if not self.has_sync(n):
            return
        mpi = self.has_mpi
        osc = self.sync_osc_label()
        base = self.sync_base(n)
        targets = mpi and any(self.sync_limit(n, x) is not None for _, _, x in SYNC_PATTERNS)
        self.out("### Window synchronization: empty epochs (time per round; allocate window, "
                 "every rank at once)")
        self.out()
        text = ("Each round opens and closes an empty epoch: fence(); fence() | post(left) "
                "start(right) complete wait | lock(next) unlock(next) | lock_all unlock_all | "
                "flush(next) with lock_all held.")
        if mpi:
            text += (f" Open MPI on {osc}; time ratios are oneside / Open MPI (below 1: "
                     "oneside is faster).")
        if base is not None:
            text += (f" \"vs {base} ranks\" is oneside's time here over its time at {base} "
                     "ranks in this run.")
        self.out(text)
        self.out()
        head, rule = "| pattern | oneside |", "|---|---:|"
        if mpi:
            head += f" Open MPI ({osc}) | oneside / Open MPI | range over runs |"
            rule += "---:|---:|---:|"
            if targets:
                head += " target |"
                rule += "---:|"
        head += " spread oneside" + (" / MPI |" if mpi else " |")
        rule += "---:|"
        if base is not None:
            head += f" vs {base} ranks |"
            rule += "---:|"
        self.out(head)
        self.out(rule)
        for label, bench, limit_at_two in SYNC_PATTERNS:
            row = f"| {label} | {fmt_time(self.time('oneside', n, bench))} |"
            spread = fmt_spread(self.get("oneside", n, bench))
            if mpi:
                p = self.paired(n, ("oneside", bench), ("mpi", "mpi_" + bench))
                row += (f" {fmt_time(self.time('mpi', n, 'mpi_' + bench))} | {fmt_pair(p)} | "
                        f"{fmt_range(p)} |")
                if targets:
                    limit = self.sync_limit(n, limit_at_two)
                    row += " |" if limit is None else f" ≤ {limit:g}× |"
                spread += f" / {fmt_spread(self.get('mpi', n, 'mpi_' + bench))}"
            row += f" {spread} |"
            if base is not None:
                row += f" {fmt_pair(self.sync_slowdown(n, base, bench))} |"
            self.out(row)
        self.out()

    # ---- dynamic windows over user memory (the rma_attached family) -------------------------

    def attached(self, n: int) -> None:
        rows = []
        for target_label, target in ATTACHED_TARGETS:
            base = f"rma_attached_fetch_and_op/{target}/allocate"
            if self.time("oneside", n, base) is None:
                continue
            for memory_label, memory in ATTACHED_MEMORY:
                bench = f"rma_attached_fetch_and_op/{target}/{memory}"
                p = self.paired(n, ("oneside", bench), ("oneside", base))
                rows.append(f"| {target_label}, {memory_label} | "
                            f"{fmt_time(self.time('oneside', n, bench))} | "
                            f"{fmt_time(self.time('oneside', n, base))} | {fmt_pair(p)} | "
                            f"{fmt_range(p)} |")
        if not rows:
            return
        self.out("### Dynamic windows over user memory: fetch_and_op + flush (time per operation)")
        self.out()
        self.out("A std::vector attached to a dynamic window, next to an allocate window in the "
                 "same process; ratios are attached / allocate (1: as fast as allocate).")
        self.out()
        self.out("| fetch_and_op int64 sum | attached | allocate | attached / allocate | "
                 "range over runs |")
        self.out("|---|---:|---:|---:|---:|")
        for row in rows:
            self.out(row)
        self.out()

    # ---- the PGAS layer (the pgas family) and its OpenSHMEM peer ----------------------------

    def has_pgas(self, n: int) -> bool:
        return any(self.get("oneside", n, row[1]) is not None for row in PGAS_ROWS)

    def has_oshmem(self, n: int) -> bool:
        return any(k[0] == "oshmem" and k[1] == n for k in self.r)

    def pgas_ratio(self, n: int, ours: str, base: tuple[str, str], bandwidth: bool
                   ) -> pair | None:
        """pgas against a baseline, per repetition: a time ratio (pgas / baseline) for a
        latency row, a bandwidth ratio (pgas / baseline) for a bandwidth row."""
        if bandwidth:
            return self.paired(n, base, ("oneside", ours))
        return self.paired(n, ("oneside", ours), base)

    def pgas_shmem_by_memcpy(self, n: int, ours: str, shmem: str, memcpy: str) -> pair | None:
        """A bandwidth row against OpenSHMEM with each side first divided by the memcpy of its
        own run: (pgas / pgas_memcpy) / (shmem / shmem_memcpy), per repetition; it takes out
        how fast the machine copied during each launch."""
        shmem_memcpy = shmem.replace("_put_", "_memcpy_").replace("_get_", "_memcpy_")
        return self.combine(n, [("oneside", ours), ("oneside", memcpy), ("oshmem", shmem),
                                ("oshmem", shmem_memcpy)],
                            lambda o, om, sh, sm: (om / o) / (sm / sh))

    def pgas_figure(self, suite_name: str, n: int, bench: str | None, bandwidth: bool) -> str:
        if bench is None:
            return "—"
        t = self.time(suite_name, n, bench)
        return fmt_bw(MIB, t) if bandwidth else fmt_time(t)

    def pgas_targets(self) -> None:
        ranks = [n for n in self.a.ranks if self.has_pgas(n)]
        if not ranks:
            return
        rows: list[tuple[str, str, str]] = []
        for n in ranks:
            at = f"{n} ranks" + (" (oversubscribed)" if self.is_oversubscribed(n) else "")
            for label, ours, window, shmem, memcpy in PGAS_ROWS:
                bandwidth = memcpy is not None
                limit = PGAS_RMA_BANDWIDTH_LIMIT if bandwidth else PGAS_RMA_LATENCY_LIMIT
                holds = ((lambda v, lim=limit: v >= lim) if bandwidth
                         else (lambda v, lim=limit: v <= lim))
                p = self.pgas_ratio(n, ours, ("oneside", window), bandwidth)
                rows.append((f"{at}: {label} within 10% of the raw rma window "
                             f"({PGAS_WINDOW_TEXT[window]}; "
                             f"{'≥' if bandwidth else '≤'} {limit:.2f}×)",
                             "n/a" if p is None else
                             f"{self.pgas_figure('oneside', n, ours, bandwidth)} vs "
                             f"{self.pgas_figure('oneside', n, window, bandwidth)}: "
                             f"{p.median:.3f}× (runs: {fmt_range(p)})",
                             self.verdict(None if p is None else holds(p.median), p, holds)))
            if not self.has_oshmem(n):
                continue
            for label, ours, _, shmem, memcpy in PGAS_ROWS:
                if shmem is None:
                    continue
                bandwidth = memcpy is not None
                holds = ((lambda v: v >= PGAS_SHMEM_LIMIT) if bandwidth
                         else (lambda v: v <= PGAS_SHMEM_LIMIT))
                p = self.pgas_ratio(n, ours, ("oshmem", shmem), bandwidth)
                measured = ("n/a" if p is None else
                            f"{self.pgas_figure('oneside', n, ours, bandwidth)} vs "
                            f"{self.pgas_figure('oshmem', n, shmem, bandwidth)}: "
                            f"{p.median:.3f}× (runs: {fmt_range(p)})")
                if bandwidth and p is not None:
                    q = self.pgas_shmem_by_memcpy(n, ours, shmem, memcpy)
                    if q is not None:
                        measured += f"; each over its own run's memcpy: {q.median:.3f}×"
                rows.append((f"{at}: {label} at least OpenSHMEM's speed (`{shmem}`; "
                             f"{'≥' if bandwidth else '≤'} {PGAS_SHMEM_LIMIT:.2f}×)",
                             measured,
                             self.verdict(None if p is None else holds(p.median), p, holds)))
        self.out("## Targets (PGAS layer)")
        self.out()
        text = ("pgas (`micro/pgas_bench.cpp`: rank 0 to rank 1 through `global_ptr`) against "
                "the same operation over a raw `rma::window::allocate` window under lock_all, "
                "measured in the same process, seconds apart: ratios from one run per "
                "repetition. ")
        if any(self.has_oshmem(n) for n in ranks):
            text += ("Against OpenSHMEM (`peers/oshmem_bench.cpp`, PE 0 to PE 1, same batches "
                     "and method): a separate launch under oshrun right before or after "
                     "oneside's pgas process, so each ratio pairs two processes of the same "
                     "repetition. ")
        elif self.network:
            text += ("OpenSHMEM is not run on the MPI transport's network path (its peer "
                     "measures one node over shared memory). ")
        else:
            text += ("OpenSHMEM did not run (bin/oshmem_bench not built, oshrun missing or "
                     "--no-oshmem). ")
        text += ("Time ratios pgas / baseline (below 1: pgas is faster); bandwidth ratios "
                 "pgas / baseline (above 1: pgas is faster). Targets are stated for 2 ranks on "
                 "one node; other rank counts are informative. Verdicts use the median of the "
                 "per-repetition ratios.")
        self.out(text)
        self.out()
        self.out("| target | measured | verdict |")
        self.out("|---|---|---|")
        for name, measured, verdict in rows:
            self.out(f"| {name} | {measured} | {verdict} |")
        self.out()

    def pgas_table(self, n: int) -> None:
        if not self.has_pgas(n):
            return
        shmem = self.has_oshmem(n)
        transport = self.transport_name(n)
        self.out(f"### PGAS layer: global_ptr vs raw rma window"
                 + (" vs OpenSHMEM" if shmem else "")
                 + f" (rank 0 to rank 1, {transport} transport)")
        self.out()
        self.out("Per operation; 1 MiB rows in bytes/s. \"vs window\" and \"vs OpenSHMEM\" are "
                 "time ratios for the 8-byte rows (below 1: pgas is faster) and bandwidth "
                 "ratios for the 1 MiB rows (above 1: pgas is faster), medians of the "
                 "per-repetition ratios; the window figures come from the same process as "
                 "pgas'" + (", OpenSHMEM's from a separate launch of the same repetition; "
                            "\"by memcpy\" divides each side by its own run's memcpy first"
                            if shmem else "") + ".")
        self.out()
        head = "| operation | pgas | raw rma window | pgas vs window | range over runs |"
        rule = "|---|---:|---:|---:|---:|"
        if shmem:
            head += " OpenSHMEM | pgas vs OpenSHMEM | range over runs | by memcpy |"
            rule += "---:|---:|---:|---:|"
        head += " spread pgas / window" + (" / OpenSHMEM |" if shmem else " |")
        rule += "---:|"
        self.out(head)
        self.out(rule)
        for label, ours, window, sh, memcpy in PGAS_ROWS:
            bandwidth = memcpy is not None
            p = self.pgas_ratio(n, ours, ("oneside", window), bandwidth)
            row = (f"| {label} | {self.pgas_figure('oneside', n, ours, bandwidth)} | "
                   f"{self.pgas_figure('oneside', n, window, bandwidth)} "
                   f"({PGAS_WINDOW_TEXT[window]}) | {fmt_pair(p)} | {fmt_range(p)} |")
            spread = (f"{fmt_spread(self.get('oneside', n, ours))} / "
                      f"{fmt_spread(self.get('oneside', n, window))}")
            if shmem:
                if sh is None:
                    row += " — | — | — | — |"
                    spread += " / —"
                else:
                    q = self.pgas_ratio(n, ours, ("oshmem", sh), bandwidth)
                    by = (self.pgas_shmem_by_memcpy(n, ours, sh, memcpy) if bandwidth
                          else None)
                    row += (f" {self.pgas_figure('oshmem', n, sh, bandwidth)} | "
                            f"{fmt_pair(q)} | {fmt_range(q)} | "
                            f"{fmt_pair(by) if bandwidth else '—'} |")
                    spread += f" / {fmt_spread(self.get('oshmem', n, sh))}"
            self.out(row + f" {spread} |")
        for label, bench, bandwidth in (("memcpy 8 B (baseline)", "pgas_memcpy_latency/8", False),
                                        ("memcpy 1 MiB (baseline)",
                                         f"pgas_memcpy_bandwidth/{MIB}", True)):
            row = f"| {label} | {self.pgas_figure('oneside', n, bench, bandwidth)} | | | |"
            spread = fmt_spread(self.get("oneside", n, bench))
            if shmem:
                theirs = bench.replace("pgas_", "oshmem_")
                row += f" {self.pgas_figure('oshmem', n, theirs, bandwidth)} | | | |"
                spread += f" / {fmt_spread(self.get('oshmem', n, theirs))}"
            self.out(row + f" {spread} |")
        self.out()
        self.out("README form:")
        self.out()
        for label, ours, window, sh, memcpy in PGAS_ROWS:
            bandwidth = memcpy is not None
            if self.get("oneside", n, ours) is None:
                continue
            parts = []
            if bandwidth:
                parts.append(fmt_pair(self.paired(n, ("oneside", memcpy), ("oneside", ours)),
                                      "memcpy"))
            what = "" if bandwidth else " time"
            parts.append(fmt_pair(self.pgas_ratio(n, ours, ("oneside", window), bandwidth),
                                  f"the raw window's{what}"))
            if shmem and sh is not None:
                parts.append(fmt_pair(self.pgas_ratio(n, ours, ("oshmem", sh), bandwidth),
                                      f"OpenSHMEM's{what}"))
            self.out(f"- {n} ranks, {label}, {transport}: " + ", ".join(parts))
        self.out()

    def worst_of(self, ps: dict, holds, low_is_bad: bool) -> tuple[str, str]:
        """Measured text and verdict of a target that must hold for every item of `ps`
        (label or size -> pair): the worst item, and the items that miss."""
        have = {k: p for k, p in ps.items() if p is not None}
        if not have:
            return "n/a", "n/a"
        label = (lambda k: fmt_size(k) if isinstance(k, int) else str(k))
        worst = (min if low_is_bad else max)(have, key=lambda k: have[k].median)
        misses = [label(k) for k, p in have.items() if not holds(p.median)]
        every = ", ".join(f"{label(k)} {fmt_pair(p)}" for k, p in have.items())
        text = f"worst {fmt_pair(have[worst])} at {label(worst)}; all: {every}"
        if len(have) < len(ps):
            text += f" ({len(ps) - len(have)} without figures)"
        verdict = "met" if not misses else f"**not met** (misses: {', '.join(misses)})"
        return text, verdict

    def noise(self) -> None:
        self.out("## Noise")
        self.out()
        loads = [x for rec in self.records for x in (rec.load_before, rec.load_after)
                 if x == x]  # not NaN
        if loads:
            self.out(f"- 1-minute load average during the runs: {min(loads):.2f} … "
                     f"{max(loads):.2f} (on {self.cores} cores)")
        for s in ("oneside", "mpi", "oshmem"):
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
        if self.network:
            self.network_targets()
        else:
            # Stated for the shm transport against Open MPI on one node.
            self.shm_targets()
        self.pgas_targets()
        self.rank_tables()
        self.noise()
        return "\n".join(self.lines)

    def shm_targets(self) -> None:
        self.check_targets()
        if self.targets:
            self.out("## Targets (issue 2)")
            self.out()
            self.out("| target | measured | verdict |")
            self.out("|---|---|---|")
            for name, measured, verdict in self.targets:
                self.out(f"| {name} | {measured} | {verdict} |")
            self.out()
        rma_targets = self.check_rma_targets()
        if rma_targets:
            self.out("## Targets (issue 3)")
            self.out()
            self.out("Issue 3 states its targets for two ranks on one node; the rows of other "
                     "rank counts apply the same rules and are informative (with more ranks "
                     "than cores, ranks share cores). Time ratios: oneside / baseline (below "
                     "1: oneside is faster); rate and bandwidth ratios: oneside / baseline "
                     "(above 1: oneside is faster). Verdicts use the median of the "
                     "per-repetition ratios.")
            self.out()
            self.out("| target | measured | verdict |")
            self.out("|---|---|---|")
            for name, measured, verdict in rma_targets:
                self.out(f"| {name} | {measured} | {verdict} |")
            self.out()
        sync_targets = self.check_sync_targets()
        if sync_targets:
            self.out("## Targets (window synchronization)")
            self.out()
            self.out("Time ratios oneside / Open MPI in the same run (below 1: oneside is "
                     "faster); the targets are stated for 2 ranks on their own cores, and as "
                     "\"no worse than Open MPI\" (≤ 1×) with more ranks than cores. Verdicts "
                     "use the median of the per-repetition ratios.")
            self.out()
            self.out("| target | measured | verdict |")
            self.out("|---|---|---|")
            for name, measured, verdict in sync_targets:
                self.out(f"| {name} | {measured} | {verdict} |")
            self.out()

    def rank_tables(self) -> None:
        for n in self.a.ranks:
            over = self.is_oversubscribed(n)
            self.out(f"## {n} ranks on {self.cores} cores"
                     + (" (oversubscribed)" if over else ""))
            self.out()
            self.collectives(n)
            self.latency(n)
            self.bandwidth(n)
            if self.has_rma(n):
                self.rma_latency(n)
                self.rma_bandwidth(n)
                self.rma_shifted(n)
                self.rma_scaling(n)
            self.attached(n)
            self.sync(n)
            self.pgas_table(n)


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
                           nan_if_none(r["load_after"]), r["seconds"], r.get("osc", ""),
                           r.get("transport", "shm"), r.get("env", ""))
                for r in saved]
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
        a.transport = "mpi" if any(r.transport == "mpi" for r in records) else "shm"
        cores = len(os.sched_getaffinity(0)) or 1
        finish(records, a, cores, out)
        return
    if a.filter:
        groups = {"all": (a.filter, a.filter)}
    else:
        groups = {g: f for g, f in GROUPS.items() if a.families is None or g in a.families}
    if all(f[1] is None for f in groups.values()):
        a.no_mpi = True  # only families without an MPI peer (pgas): no MPI suite needed
    suites = find_suites(a, groups)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    records = run_interleaved(a, groups, suites, cores or 1, out)
    finish(records, a, cores or 1, out)


def finish(records: list[run_record], a: argparse.Namespace, cores: int, out: Path) -> None:
    (out / "runs.json").write_text(json.dumps(
        [{"suite": r.suite, "ranks": r.ranks, "repetition": r.repetition, "group": r.group,
          "json": r.json_path.name, "load_before": none_if_nan(r.load_before),
          "load_after": none_if_nan(r.load_after), "seconds": r.seconds, "osc": r.osc,
          "transport": r.transport, "env": r.env}
         for r in records],
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
