"""The mini-apps oneside-bench drives, one entry each in APPS: the binary, its peers, its
command line for a problem size, how the size grows with the ranks (weak scaling), the figures
it prints and how to read them.

Adding an app is one entry. Its figures are read by `parse` (default parse_figures: one regex
per figure on stdout); an app that writes a record of its own names the option in
`json_option` (e.g. "--json": each launch then gets `--json <file>`, and `parse` receives
that file's path). For instance, a Graph500 BFS printing the reference output's
`bfs  harmonic_mean_TEPS: 1.2e8` lines is

    app("graph500", "graph500", (peer("mpi_bfs", "mpi_graph500"),),
        args=lambda s: ["--scale", str(s["scale"])], base={"scale": 16},
        weak=lambda s, r: {**s, "scale": s["scale"] + log2_ceil(r)},
        figures=(figure("teps", r"bfs\\s+harmonic_mean_TEPS:\\s+(\\S+)", "TEPS", "higher"),),
        work=lambda s: 16 * 2 ** s["scale"] / 1e6, guess=20.0, validates=None)

and PageRank or CC, printing time lines, a figure with better="lower" and unit "s"."""

from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class figure:
    """A figure an app prints: the regex's first group is its value."""
    metric: str  # "rate", "time", "teps", ...
    pattern: str
    unit: str
    better: str  # "higher" or "lower"


@dataclass(frozen=True)
class peer:
    """A baseline program of an app, launched with the app's size arguments (plus `extra`)
    under mpirun: PRK's MPI versions, HPCC's MPI GUPS."""
    label: str  # its rows are "<app>/<label>"
    binary: str
    extra: tuple[str, ...] = ()


def parse_figures(a: "app", stdout: str, record: Path | None) -> dict[str, float]:
    """Every figure of `a` from a launch's stdout ({}: one is missing). `record` (the file given
    with a.json_option) is not read: the apps of today print their figures."""
    del record
    got = {}
    for f in a.figures:
        m = re.search(f.pattern, stdout)
        if m is None:
            return {}
        got[f.metric] = float(m.group(1))
    return got


@dataclass(frozen=True)
class app:
    name: str
    binary: str
    peers: tuple[peer, ...]
    args: Callable[[dict], list[str]]  # problem size -> the command line's arguments
    base: dict  # the default problem size (strong scaling: at every rank count)
    weak: Callable[[dict, int], dict]  # base size, ranks -> the size with as much work per rank
    figures: tuple[figure, ...]
    work: Callable[[dict], float]  # the first figure's units of work of one launch (estimates)
    guess: float  # the first figure's rate per rank to expect, for estimates only
    validates: str | None = "Solution validates"  # a line every good launch prints
    parse: Callable[["app", str, Path | None], dict[str, float]] = parse_figures
    json_option: str | None = None
    variant_option: str = "--variant"
    notes: dict = field(default_factory=dict)

    def size(self, scaling: str, ranks: int, base: dict | None = None) -> dict:
        start = dict(self.base if base is None else base)
        return start if scaling == "strong" else self.weak(start, ranks)

    def seconds(self, size: dict, ranks: int, cores: int) -> float:
        """A rough duration of one launch's work (plans and progress estimates)."""
        return self.work(size) / (self.guess * max(1, min(ranks, cores)))


def log2_ceil(n: int) -> int:
    return max(0, math.ceil(math.log2(n)))


def grow_side(size: dict, key: str, ranks: int) -> dict:
    """Weak scaling of a square problem: the side grows with sqrt(ranks) (same cells per
    rank)."""
    return {**size, key: int(round(size[key] * math.sqrt(ranks)))}


APPS = {
    # PRK Stencil (MFlops/s); MPI-RMA put + fence peer (bench/peers/mpi_stencil.cpp).
    "stencil": app(
        "stencil", "stencil", (peer("mpi_rma", "mpi_stencil"),),
        args=lambda s: ["--n", str(s["n"]), "--radius", str(s["radius"]),
                        "--iterations", str(s["iterations"])],
        base={"n": 2000, "radius": 2, "iterations": 20},
        weak=lambda s, r: grow_side(s, "n", r),
        figures=(figure("rate", r"Rate \(MFlops/s\):\s*([0-9.eE+-]+)", "MFlops/s", "higher"),),
        work=lambda s: 2 * (4 * s["radius"] + 1) * s["n"] ** 2 * (s["iterations"] + 1) / 1e6,
        guess=800.0),
    # PRK Transpose (MB/s); MPI1 peer (bench/peers/mpi_transpose.cpp).
    "transpose": app(
        "transpose", "transpose", (peer("mpi1", "mpi_transpose"),),
        args=lambda s: [str(s["iterations"]), str(s["order"]), str(s["tile"])],
        base={"order": 2048, "iterations": 10, "tile": 32},
        weak=lambda s, r: grow_side(s, "order", r),
        figures=(figure("rate", r"Rate \(MB/s\):\s*([0-9.eE+-]+)", "MB/s", "higher"),),
        work=lambda s: 16 * s["order"] ** 2 * (s["iterations"] + 1) / 1e6,
        guess=1000.0),
    # HPCC RandomAccess (GUP/s); HPCC's MPI bucket peer (bench/peers/mpi_gups.cpp).
    "gups": app(
        "gups", "gups", (peer("mpi_bucket", "mpi_gups"),),
        args=lambda s: ["--log2-table", str(s["log2_table"]),
                        "--updates-factor", str(s["updates_factor"])],
        base={"log2_table": 22, "updates_factor": 4},
        weak=lambda s, r: {**s, "log2_table": s["log2_table"] + log2_ceil(r)},
        figures=(figure("rate", r"([0-9.]+) Billion\(10\^9\) Updates\s+per second", "GUP/s",
                        "higher"),),
        work=lambda s: s["updates_factor"] * 2 ** s["log2_table"] / 1e9 * 3,  # with verify
        guess=0.02),
    # Graph500 BFS (harmonic-mean TEPS, 16 search keys, SSSP skipped: its TEPS is not a scaling
    # figure of this table); MPI two-sided level-synchronous peer (bench/peers/mpi_graph_bfs).
    "graph500": app(
        # (the peer searches from the same 64 keys as graph500's default NBFS: a key in a
        # tiny component, as at scale 19, lowers both harmonic means alike)
        "graph500", "graph500", (peer("mpi_two_sided", "mpi_graph_bfs", ("--roots", "64")),),
        args=lambda s: ["--scale", str(s["scale"]), "--edgefactor", "16"],
        base={"scale": 18},
        weak=lambda s, r: {**s, "scale": s["scale"] + log2_ceil(r)},
        figures=(figure("teps", r"bfs\s+harmonic_mean_TEPS:\s+!?\s*([0-9.eE+-]+)", "TEPS",
                        "higher"),),
        work=lambda s: 64 * 16 * 2 ** s["scale"] / 1e6 * 3,  # 64 searches, validation, kernel 1
        guess=100.0, validates=None, variant_option="--bfs"),
    # PageRank (seconds per iteration, 20 iterations) and connected components (the fastest of
    # 3 runs) on the same Kronecker graphs; no MPI peer (graph_serial and graph_tbb, the
    # single-thread and TBB baselines, run in bench/run_graph.py).
    "pagerank": app(
        "pagerank", "pagerank", (),
        args=lambda s: ["--scale", str(s["scale"]), "--iterations", "20"],
        base={"scale": 18},
        weak=lambda s, r: {**s, "scale": s["scale"] + log2_ceil(r)},
        figures=(figure("time", r"time per iteration:\s+([0-9.eE+-]+) s", "s", "lower"),),
        work=lambda s: 20 * 32 * 2 ** s["scale"] / 1e6, guess=500.0, validates=None),
    "cc": app(
        "cc", "cc", (),
        args=lambda s: ["--scale", str(s["scale"]), "--repeat", "3"],
        base={"scale": 18},
        weak=lambda s, r: {**s, "scale": s["scale"] + log2_ceil(r)},
        figures=(figure("time", r"cc time:\s+([0-9.eE+-]+) s", "s", "lower"),),
        work=lambda s: 3 * 32 * 2 ** s["scale"] / 1e6, guess=500.0, validates=None),
}


def variants_pattern(a: app) -> re.Pattern:
    """The line of `a`'s --help listing its variants (e.g. `--variant V  fence, pscw (default`)."""
    return re.compile(re.escape(a.variant_option) +
                      r" V\s+(?:[^\n:(]*:\s*)?([\w, ]+?)\s*\(default")


def offered_variants(a: app, bindir: Path) -> list[str]:
    """The variants the built binary offers (its --help), the default first; [""] when it has
    none."""
    binary = bindir / a.binary
    try:
        out = subprocess.run([str(binary), "--help"], capture_output=True, text=True,
                             timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    m = variants_pattern(a).search(out)
    return [v.strip() for v in m.group(1).split(",")] if m else [""]
