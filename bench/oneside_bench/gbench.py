"""Google Benchmark suites: oneside's micro-benchmarks and their MPI and OpenSHMEM peers,
run family by family and interleaved (run.py's method, shared with oneside-bench micro), and
their results collected per repetition (medians, spreads)."""

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
from typing import Callable

from .util import fail, load_average

MIB = 1 << 20
TIME_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

# Families run as separate, back-to-back processes of the two suites, so that each oneside
# figure and its MPI peer are measured seconds apart (this machine's state changes over
# tens of seconds): name -> (oneside filter, MPI filter). The rma_* families (the windows of
# micro/rma_bench.cpp, one family per kind of window) also name the Open MPI one-sided
# component their MPI process needs (RMA_OSC).
GROUPS = {
    "barrier": ("^barrier", "^mpi_barrier"),
    "allreduce": ("^allreduce", "^mpi_allreduce"),
    "broadcast": ("^broadcast", "^mpi_bcast"),
    "latency": ("^(put|get)_latency", "^mpi_(put|get)_latency"),
    "wait": ("^(ping_pong|token_ring)", "^mpi_(ping_pong|token_ring)"),
    "bandwidth": ("^(put|get|memcpy)_bandwidth", "^mpi_(put|get)_bandwidth"),
    # The machine baselines (memcpy in the same sizes and batches; the scaling bench's
    # additions on private memory) run with the allocate family.
    "rma_allocate": ("^rma_(memcpy_bandwidth|memcpy_bandwidth_shifted|add_scaling|"
                     "[a-z_]+/allocate)/",
                     "^mpi_rma_[a-z_]+/allocate/"),
    "rma_dynamic": ("^rma_[a-z_]+/dynamic/", "^mpi_rma_[a-z_]+/dynamic/"),
    "rma_create": ("^rma_[a-z_]+/create/", "^mpi_rma_[a-z_]+/create/"),
    # fetch_and_op on dynamic windows over user memory next to an allocate window, in one
    # process (issue 18): no MPI peer.
    "rma_attached": ("^rma_attached_", None),
    # Window synchronization with empty epochs (micro/sync_bench.cpp), its MPI process on
    # --mpi-osc (sm by default: the benches use MPI_Win_allocate windows).
    "sync": ("^rma_sync_", "^mpi_rma_sync_"),
    # The PGAS layer (micro/pgas_bench.cpp) with its raw rma window baseline in the same
    # process: no MPI peer (None); its OpenSHMEM peer runs in the oshmem suite (OSHMEM_GROUPS).
    "pgas": ("^pgas_", None),
    # OSU-style sweeps (micro/osu_bench.cpp): every size, every synchronization mode, on
    # allocate windows (the MPI process on --mpi-osc, sm by default, as the sync family).
    "osu_latency": ("^osu_(put|get)_latency/", "^mpi_osu_(put|get)_latency/"),
    "osu_bw": ("^osu_(put|get)_bw/", "^mpi_osu_(put|get)_bw/"),
    "osu_atomic": ("^osu_(acc|get_acc|fop|cas)_latency/",
                   "^mpi_osu_(acc|get_acc|fop|cas)_latency/"),
}

# The sweeps run only when named: run.py's default families leave them out (its report
# checks targets at fixed sizes; a sweep takes minutes).
SWEEP_FAMILIES = ("osu_latency", "osu_bw", "osu_atomic")

# The families the OpenSHMEM suite (bin/oshmem_bench under oshrun) runs with, and its filter
# there (None: every benchmark of oshmem_bench).
OSHMEM_GROUPS = {"pgas": None}
# How oshmem_bench runs on this machine (Open MPI 4.1.4's OSHMEM; bench/README.md says why):
# SPML ucx, UCX's own memory hooks (Open MPI's segfault in shmem_finalize otherwise), and UCX
# over shared memory (the origin maps the target's symmetric heap: the peer of the shm
# transport).
OSHMEM_OSHRUN = ["--mca", "spml", "ucx", "--mca", "opal_common_ucx_opal_mem_hooks", "0",
                 "-x", "UCX_TLS=sm,self"]

# The Open MPI one-sided component of the dynamic and create families' MPI processes (run.py
# says why).
RMA_OSC_DEFAULT = {"dynamic": "rdma", "create": "rdma"}

# --transport mpi: the MPI transport's network path on this machine (Open MPI 4.1.4), used by
# both suites alike: TCP between the ranks (btl tcp; UCX over TCP), ranks unbound (the
# transport's progress thread needs a core too). osc/ucx is the one-sided component that
# works there for every kind of window: osc/rdma cannot create windows over the TCP btl and
# osc/pt2pt refuses MPI_THREAD_MULTIPLE, which the transport needs. (osc/ucx allows at most 32
# MPI_Win_attach per rank on a dynamic window: the transport's chunks and the peers' one
# attachment stay below that.)
NETWORK_MPIRUN = ["--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,tcp",
                  "-x", "UCX_TLS=tcp,self"]
NETWORK_OSC = "ucx"
# The families the MPI transport's comparison needs (the default with --transport mpi):
# oneside's allocate windows, whose memory lives in the transport's one dynamic window, and
# the MPI peers' allocate and dynamic windows.
NETWORK_FAMILIES = ["rma_allocate", "rma_dynamic"]


# ---- running --------------------------------------------------------------------------


@dataclass
class suite:
    name: str  # "oneside", "mpi" or "oshmem" (the pgas family's OpenSHMEM peer)
    launcher: list[str]
    program: Path
    network: bool = False  # under mpirun on the MPI transport's network path (--transport mpi)
    # On the network path: the placement flags after `-n N` (None: NETWORK_MPIRUN; a launcher
    # given on the command line, a.launcher, brings its own: []).
    placement: list[str] | None = None

    @property
    def uses_mpirun(self) -> bool:
        """Started by Open MPI's launcher (mpirun, or oshrun for the OpenSHMEM suite)."""
        return self.network or self.name in ("mpi", "oshmem")

    @property
    def takes_osc(self) -> bool:
        """Whether the run is given an MPI one-sided component (--mca osc)."""
        return self.network or self.name == "mpi"

    def command(self, ranks: int, cores: int, extra: list[str], osc: str = "default"
                ) -> list[str]:
        if self.name == "oneside" and not self.network:
            # oneside-run binds to cores while ranks <= cores, else leaves ranks unbound.
            return [*self.launcher, "-n", str(ranks), str(self.program), *extra]
        # The same placement policy for Open MPI, spelled out (on the network path: its
        # flags, the same for both suites); then the one-sided component (OpenSHMEM: its
        # own flags instead).
        if self.network:
            placement = NETWORK_MPIRUN if self.placement is None else self.placement
        else:
            placement = (["--oversubscribe", "--bind-to", "none"] if ranks > cores
                         else ["--bind-to", "core"])
        if self.name == "oshmem":
            options = OSHMEM_OSHRUN
        else:
            options = [] if osc == "default" else ["--mca", "osc", osc]
        return [*self.launcher, "-n", str(ranks), *placement, *options, str(self.program),
                *extra]


def launcher_of(a: argparse.Namespace) -> list[str]:
    """The launcher given on oneside-bench's command line (--launcher), or [] (run.py has
    none: mpirun with NETWORK_MPIRUN on the network path)."""
    return list(getattr(a, "launcher", None) or [])


def is_open_mpi(launcher: list[str]) -> bool:
    """Whether a launcher is Open MPI's (takes -x NAME=VALUE and --mca); an empty launcher is
    run.py's mpirun."""
    return not launcher or Path(launcher[0]).name in ("mpirun", "mpiexec", "orterun")


def family_osc(a: argparse.Namespace, group: str) -> str:
    """The Open MPI one-sided component of a family's MPI process ("default": Open MPI's
    own choice); on the network path, every process's (both suites)."""
    if a.transport == "mpi":  # a launcher given on the command line brings its own flags
        return "default" if launcher_of(a) else NETWORK_OSC
    if group == "rma_dynamic":
        return a.mpi_osc_dynamic
    if group == "rma_create":
        return a.mpi_osc_create
    return a.mpi_osc


def mpi_filter(a: argparse.Namespace, group: str, bench_filter: str) -> str:
    """The MPI filter of a family. MPI_Compare_and_swap on an MPI_Win_allocate window
    segfaults the target under Open MPI 4.1.4's osc/rdma (its default here), so the
    allocate family leaves that one benchmark out unless it runs on osc/sm or osc/ucx, where
    it works (Google Benchmark's filters are POSIX extended regexes: no lookahead, hence the
    list)."""
    if group == "rma_allocate" and family_osc(a, group) not in ("sm", NETWORK_OSC):
        return ("^mpi_rma_(put_latency|get_latency|put_rate|fetch_and_op|accumulate_latency|"
                "get_accumulate|accumulate_scaling|put_bandwidth|get_bandwidth|"
                "put_bandwidth_shifted|get_bandwidth_shifted)/allocate/")
    return bench_filter


def find_suites(a: argparse.Namespace, groups: dict) -> list[suite]:
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
    mpirun = shutil.which(a.mpirun)
    if mpirun is None and (a.transport == "mpi" or not a.no_mpi) and not launcher_of(a):
        fail(f"{a.mpirun} not found on PATH; install Open MPI"
             + (" (--transport mpi starts oneside with it)" if a.transport == "mpi"
                else " or pass --no-mpi"))
    if a.transport == "mpi" and launcher_of(a):
        # A launcher given on the command line (oneside-bench --launcher): both suites under
        # it, with its own placement; oneside's settings (ONESIDE_TRANSPORT=mpi among them)
        # through -x under Open MPI, else through the environment the launcher passes on.
        launcher = list(launcher_of(a))
        if shutil.which(launcher[0]) is None:
            fail(f"the launcher {launcher[0]} is not on PATH")
        settings = ([x for kv in a.oneside_env for x in ("-x", kv)]
                    if is_open_mpi(launcher) else [])
        suites = [suite("oneside", [*launcher, *settings], bindir / "oneside_micro_bench",
                        network=True, placement=[])]
        if not a.no_mpi:
            suites.append(suite("mpi", launcher, bindir / "oneside_mpi_peers", network=True,
                                placement=[]))
        return suites
    if a.transport == "mpi":
        # Both under mpirun, which ends a job at --timeout as oneside-run does. oneside's ranks
        # bootstrap from MPI_COMM_WORLD; every peer goes through MPI.
        launcher = [mpirun, "--timeout", str(a.timeout)]
        settings = [x for kv in a.oneside_env for x in ("-x", kv)]
        suites = [suite("oneside", [*launcher, "-x", "ONESIDE_TRANSPORT=mpi", *settings],
                        bindir / "oneside_micro_bench", network=True)]
        if not a.no_mpi:
            suites.append(suite("mpi", launcher, bindir / "oneside_mpi_peers", network=True))
        return suites
    suites = [suite("oneside", [str(bindir / "oneside-run"), "--timeout", str(a.timeout)],
                    bindir / "oneside_micro_bench")]
    if not a.no_mpi:
        suites.append(suite("mpi", [mpirun], bindir / "oneside_mpi_peers"))
    oshmem = find_oshmem(a, groups, bindir)
    if oshmem is not None:
        suites.append(oshmem)
    return suites


def find_oshmem(a: argparse.Namespace, groups: dict, bindir: Path) -> suite | None:
    """The OpenSHMEM suite (oshmem_bench under oshrun), when a family it peers runs, it was
    built and oshrun is there; otherwise None, saying why on stderr (the report then has no
    OpenSHMEM columns). On one node only: not with --transport mpi."""
    if a.no_oshmem or not any(g in OSHMEM_GROUPS for g in groups):
        return None
    program = bindir / "oshmem_bench"
    if not (program.is_file() and os.access(program, os.X_OK)):
        print(f"[run.py] note: {program} is missing, so the pgas family runs without its "
              "OpenSHMEM peer (it is built only when CMake finds Open MPI's OSHMEM; build it "
              f"with: cmake --build {a.build_dir.resolve()} --target oshmem_bench)",
              file=sys.stderr)
        return None
    oshrun = shutil.which(a.oshrun)
    if oshrun is None:
        print(f"[run.py] note: {a.oshrun} not found on PATH, so the pgas family runs without "
              "its OpenSHMEM peer", file=sys.stderr)
        return None
    return suite("oshmem", [oshrun, "--timeout", str(a.timeout)], program)


def suite_filter(a: argparse.Namespace, s: suite, group: str, filters: tuple
                 ) -> tuple[bool, str | None]:
    """(whether suite s runs for this family, its --benchmark_filter)."""
    if s.name == "oneside":
        return True, filters[0]
    if s.name == "oshmem":
        return group in OSHMEM_GROUPS, OSHMEM_GROUPS.get(group)
    if filters[1] is None:  # a family without an MPI peer
        return False, None
    return True, mpi_filter(a, group, filters[1])


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
    osc: str = ""  # the MPI runs' one-sided component ("default": Open MPI's choice)
    transport: str = "shm"  # --transport of the invocation
    env: str = ""  # oneside runs: the --oneside-env settings, space-separated


def run_one(s: suite, ranks: int, rep: int, group: str, bench_filter: str | None,
            a: argparse.Namespace, cores: int, out: Path) -> run_record:
    stem = f"{s.name}-np{ranks}-rep{rep}-{group}"
    json_path = out / "raw" / f"{stem}.json"
    log_path = out / "logs" / f"{stem}.log"
    extra = [f"--benchmark_min_time={a.min_time}", f"--benchmark_out={json_path}",
             "--benchmark_out_format=json", "--benchmark_color=false"]
    if bench_filter:
        extra.append(f"--benchmark_filter={bench_filter}")
    osc = family_osc(a, group) if s.takes_osc else ""
    cmd = s.command(ranks, cores, extra, osc or "default")
    env = dict(os.environ)
    if s.name == "oneside":
        # oneside-run hands its environment to the ranks (under mpirun: the -x flags above).
        env.update(kv.partition("=")[::2] for kv in a.oneside_env)
    if s.uses_mpirun and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    print(f"[{Path(sys.argv[0]).name}] np={ranks} rep {rep}/{a.repetitions} {group:9} {s.name:7}: "
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
                      seconds, osc, a.transport,
                      " ".join(a.oneside_env) if s.name == "oneside" else "")


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
    if size is None and family.startswith(("rma_", "mpi_rma_")) and "rma_sync_" not in family:
        size = rma_bytes(family, parts[1:])
    if size is None and family.startswith(("pgas_", "oshmem_", "osu_", "mpi_osu_")):
        # pgas_put_latency/rput/8 -> 8, osu_put_bw/flush/1024 -> 1024; an int64 atomic
        # (…/int64, osu_fop_latency/flush) -> 8.
        numbers = [int(x) for x in parts[1:] if x.isdigit()]
        size = numbers[-1] if numbers else 8
    return "/".join(parts), family, size


def rma_bytes(family: str, rest: list[str]) -> int:
    """Bytes one operation of an rma_* benchmark moves: rma_put_latency/allocate/8 -> 8,
    rma_accumulate_latency/allocate/1024 (elements) -> 8192, an atomic -> 8, a block of the
    scaling bench -> 8192."""
    numbers = [int(x) for x in rest if x.isdigit()]
    if family.endswith("accumulate_latency") and numbers:
        return 8 * numbers[-1]
    if family.endswith("accumulate_scaling"):
        return 8 * 1024
    return numbers[-1] if numbers else 8


def collect(records: list[run_record]) -> tuple[dict, dict]:
    results: dict[tuple[str, int, str], result] = {}
    contexts: dict[tuple[str, int], dict] = {}
    for rec in records:
        text = rec.json_path.read_text()
        if not text.strip():
            continue  # a --filter that matched none of this suite's benchmarks: no output
        data = json.loads(text)
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


def run_interleaved(a: argparse.Namespace, groups: dict, suites: list[suite], cores: int,
                    out: Path, step: Callable[[run_record], None] | None = None
                    ) -> list[run_record]:
    """Runs every family of `groups` at each rank count of a.ranks, a.repetitions times:
    interleaved, and alternating who goes first: oneside, MPI | MPI, oneside … (the pgas
    family: oneside, OpenSHMEM | OpenSHMEM, oneside …). `step` sees each finished run."""
    (out / "raw").mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    records: list[run_record] = []
    for s, n, rep, group, f in interleaved_plan(a, groups, suites, a.ranks):
        records.append(run_one(s, n, rep, group, f, a, cores, out))
        if step is not None:
            step(records[-1])
    return records


def interleaved_plan(a: argparse.Namespace, groups: dict, suites: list[suite],
                     ranks: list[int]) -> list[tuple[suite, int, int, str, str | None]]:
    """The runs of run_interleaved, in order: (suite, ranks, repetition, family, filter)."""
    plan = []
    for n in ranks:
        for rep in range(1, a.repetitions + 1):
            for group, filters in groups.items():
                order = suites if rep % 2 == 1 else list(reversed(suites))
                for s in order:
                    runs, f = suite_filter(a, s, group, filters)
                    if runs:
                        plan.append((s, n, rep, group, f))
    return plan
