"""Plans and runs the launches of micro, apps and scale: a list of steps, each with an
estimated duration (--dry-run prints the plan), run with one progress line per step (elapsed
time, what is left), and the record (schema.py) built from what they measured.

Micro-benchmarks run family by family through gbench (run.py's interleaving: oneside, MPI |
MPI, oneside …). Apps run in rounds: each round launches every program of one app at one rank
count and scaling mode once (every variant and every peer), the order rotated from round to
round, so all see the same machine state; a round's figures are one repetition."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import environment, gbench, schema
from .apps import app, offered_variants
from .util import fail, load_average, summary

# The MPI peers of the apps on one node: Open MPI's shared-memory BTL (vader, single copy)
# with ob1, as bench/run_gups.py and run_transpose.py launch them.
SHM_MPI_FLAGS = ["--mca", "pml", "ob1", "--mca", "btl", "self,vader"]


@dataclass
class options:
    """What every launch needs (from the command line or a study)."""
    build: Path
    out: Path
    transport: str = "shm"  # shm: oneside-run; mpi: every rank a node of its own, over MPI
    launcher: list[str] = field(default_factory=list)  # [] : oneside-run / mpirun (defaults)
    mpirun: str = "mpirun"
    timeout: int = 900
    oneside_env: list[str] = field(default_factory=list)  # ONESIDE_NAME=VALUE for oneside
    repetitions: int = 3
    no_mpi: bool = False  # no MPI peers
    cores: int = field(default_factory=environment.cores)

    @property
    def bindir(self) -> Path:
        return self.build / "bin"

    def oneside_settings(self) -> list[str]:
        """oneside's settings: the transport first, then --oneside-env."""
        return [f"ONESIDE_TRANSPORT={self.transport}", *self.oneside_env]


@dataclass
class step:
    label: str  # what the progress line names
    command: str  # what --dry-run prints
    estimate: float  # seconds
    action: Callable[[], None]


def startup_seconds(o: options) -> float:
    """A launch's start and end, for estimates: oneside-run about a second, mpirun with its
    TCP wire-up a few."""
    return 1.0 if o.transport == "shm" else 3.0


def _binding(o: options, ranks: int) -> str:
    if o.launcher:
        return "launcher"
    return "core" if o.transport == "shm" and ranks <= o.cores else "none"


def _base_env() -> dict[str, str]:
    env = dict(os.environ)
    if os.geteuid() == 0:  # CI containers: Open MPI refuses root unless told
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def launch_command(o: options, suite: str, ranks: int, argv: list[str]
                   ) -> tuple[list[str], dict[str, str]]:
    """The command and environment that start `argv` on `ranks` ranks: oneside's programs
    under oneside-run (shm) or the MPI launcher with oneside's settings (mpi), MPI peers under
    mpirun on one node (shm) or the same launcher."""
    env = _base_env()
    n = ["-n", str(ranks)]
    if suite == "oneside":
        env.update(kv.partition("=")[::2] for kv in o.oneside_settings())
    if o.transport == "shm":
        if suite == "oneside":  # binds to cores while ranks <= cores
            return [str(o.bindir / "oneside-run"), *n, "--timeout", str(o.timeout), *argv], env
        placement = (["--bind-to", "core"] if ranks <= o.cores
                     else ["--oversubscribe", "--bind-to", "none"])
        return [o.mpirun, *n, "--timeout", str(o.timeout), *placement, *SHM_MPI_FLAGS,
                *argv], env
    launcher = o.launcher or [o.mpirun, "--timeout", str(o.timeout), *gbench.NETWORK_MPIRUN,
                              "--mca", "osc", gbench.NETWORK_OSC]
    settings = []
    if suite == "oneside" and gbench.is_open_mpi(launcher):
        settings = [x for kv in o.oneside_settings() for x in ("-x", kv)]
    return [*launcher, *n, *settings, *argv], env


# ---- rows -----------------------------------------------------------------------------


def make_row(*, kind: str, name: str, suite: str, peer_of: str | None, family: str,
             ranks: int, o: options, scaling: str | None, size: dict, metric: str, unit: str,
             better: str, values: list[float], loads: list[float],
             binding: str | None = None) -> dict:
    launcher = (shlex.join(o.launcher) if o.launcher
                else "oneside-run" if suite == "oneside" and o.transport == "shm" else o.mpirun)
    return {"kind": kind, "name": name, "suite": suite, "peer_of": peer_of, "family": family,
            "ranks": ranks, "transport": o.transport,
            "binding": binding or _binding(o, ranks),
            "launcher": launcher, "scaling": scaling, "size": size, "metric": metric,
            "unit": unit, "better": better, "values": values, **summary(values),
            "load_average": [x for x in loads if x == x]}


def micro_peer_of(suite: str, name: str) -> str | None:
    """The oneside benchmark (or family) an MPI or OpenSHMEM benchmark is the baseline of."""
    if suite == "mpi":
        base = name.removeprefix("mpi_")
        return "broadcast" + base.removeprefix("bcast") if base.startswith("bcast") else base
    if suite == "oshmem":
        return "pgas_" + name.removeprefix("oshmem_").split("/")[0]
    return None


def micro_rows(records: list[gbench.run_record], o: options) -> list[dict]:
    results, contexts = gbench.collect(records)
    loads: dict[tuple[str, int, int], float] = {}
    for r in records:
        key = (r.suite, r.ranks, r.repetition)
        loads[key] = max(loads.get(key, float("-inf")), r.load_before)
    rows = []
    for (suite_name, ranks, bench), r in sorted(results.items()):
        reps = sorted(r.by_rep)
        rows.append(make_row(
            kind="micro", name=bench, suite=suite_name, peer_of=micro_peer_of(suite_name, bench),
            family=r.family, ranks=ranks, o=o, scaling=None,
            size={} if r.bytes is None else {"bytes": r.bytes}, metric="time", unit="ns",
            better="lower", values=[r.by_rep[i] for i in reps],
            loads=[loads.get((suite_name, ranks, i), float("nan")) for i in reps],
            # as the program saw it (the oneside benches record their binding)
            binding=contexts.get((suite_name, ranks), {}).get("binding")))
    return rows


# ---- micro steps ----------------------------------------------------------------------


def micro_namespace(o: options, ranks: list[int], families: list[str] | None, min_time: float,
                    bench_filter: str | None) -> argparse.Namespace:
    """The options gbench (run.py's runner) reads."""
    return argparse.Namespace(
        build_dir=o.build, transport=o.transport, ranks=ranks, repetitions=o.repetitions,
        min_time=min_time, filter=bench_filter, timeout=o.timeout,
        # (run.py's own network launch adds ONESIDE_TRANSPORT=mpi itself)
        oneside_env=(list(o.oneside_env) if o.transport == "mpi" and not o.launcher
                     else o.oneside_settings()),
        no_mpi=o.no_mpi, mpirun=o.mpirun, oshrun="oshrun", no_oshmem=o.transport == "mpi",
        mpi_osc="sm", mpi_osc_dynamic=gbench.RMA_OSC_DEFAULT["dynamic"],
        mpi_osc_create=gbench.RMA_OSC_DEFAULT["create"], families=families,
        launcher=o.launcher)


def _count_benchmarks(program: Path, bench_filter: str | None, cache: dict) -> int:
    """How many benchmarks a filter selects (for estimates; 10 when it cannot tell)."""
    key = (program, bench_filter)
    if key not in cache:
        cmd = [str(program), "--benchmark_list_tests=true"]
        if bench_filter:
            cmd.append(f"--benchmark_filter={bench_filter}")
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False,
                                 env=dict(_base_env(), ONESIDE_TRANSPORT="shm"))
            cache[key] = len([x for x in out.stdout.splitlines() if x.strip()])
        except (OSError, subprocess.TimeoutExpired):
            cache[key] = 10
    return cache[key]


def micro_steps(o: options, ranks: list[int], families: list[str] | None, min_time: float,
                bench_filter: str | None, records: list[gbench.run_record]) -> list[step]:
    a = micro_namespace(o, ranks, families, min_time, bench_filter)
    if bench_filter:
        groups = {"all": (bench_filter, bench_filter)}
    else:
        unknown = [f for f in families or [] if f not in gbench.GROUPS]
        if unknown:
            fail(f"unknown micro families {', '.join(unknown)} (known: "
                 f"{', '.join(gbench.GROUPS)})")
        groups = {g: f for g, f in gbench.GROUPS.items() if families is None or g in families}
    if all(f[1] is None for f in groups.values()):
        a.no_mpi = True
    suites = gbench.find_suites(a, groups)
    counts: dict = {}
    steps = []
    for s, n, rep, group, f in gbench.interleaved_plan(a, groups, suites, ranks):
        # Google Benchmark runs each benchmark for about min_time, a little more in batches.
        # (OpenSHMEM's program is not started bare: its count is a guess)
        count = 10 if s.name == "oshmem" else _count_benchmarks(s.program, f, counts)
        seconds = startup_seconds(o) + count * (1.5 * min_time + 0.05)
        cmd = s.command(n, o.cores, [f"--benchmark_filter={f}"] if f else [],
                        gbench.family_osc(a, group) if s.takes_osc else "default")

        def run(s=s, n=n, rep=rep, group=group, f=f) -> None:
            records.append(gbench.run_one(s, n, rep, group, f, a, o.cores, o.out))
        steps.append(step(f"micro {group} {s.name} np{n} rep {rep}/{o.repetitions}",
                          shlex.join(cmd), seconds, run))
    return steps


# ---- app steps ------------------------------------------------------------------------


@dataclass
class app_program:
    """One program of an app's rounds: a oneside variant or a peer."""
    a: app
    suite: str
    label: str  # variant or peer label
    argv_tail: list[str]  # after the binary and the size arguments
    binary: str

    @property
    def name(self) -> str:
        return f"{self.a.name}/{self.label}" if self.label else self.a.name


@dataclass
class app_results:
    """Figures collected per row: key -> (row fields, values, loads)."""
    rows: dict = field(default_factory=dict)

    def add(self, fields: dict, value: float, load: float) -> None:
        key = json.dumps(fields, sort_keys=True)
        entry = self.rows.setdefault(key, (fields, [], []))
        entry[1].append(value)
        entry[2].append(load)

    def to_rows(self, o: options) -> list[dict]:
        return [make_row(o=o, values=v, loads=l, **f) for f, v, l in self.rows.values()]


def app_programs(a: app, o: options, variants: list[str] | None) -> list[app_program]:
    offered = offered_variants(a, o.bindir)
    if not offered:
        fail(f"{o.bindir / a.binary} is missing or does not run; build it with: cmake --build "
             f"{o.build} --target {a.binary}")
    chosen = offered if variants is None else variants
    unknown = [v for v in chosen if v not in offered]
    if unknown:
        fail(f"{a.name} does not offer the variant(s) {', '.join(unknown)} (it offers: "
             f"{', '.join(offered)})")
    progs = [app_program(a, "oneside", v, [a.variant_option, v] if v else [], a.binary)
             for v in chosen]
    if not o.no_mpi:
        for p in a.peers:
            if not (o.bindir / p.binary).is_file():
                fail(f"{o.bindir / p.binary} is missing (the {a.name} peer {p.label}); build it "
                     f"with: cmake --build {o.build} --target {p.binary}, or pass --no-mpi")
            progs.append(app_program(a, "mpi", p.label, list(p.extra), p.binary))
    return progs


def _launch_app(o: options, p: app_program, ranks: int, size: dict, scaling: str | None,
                rnd: int, results: app_results) -> None:
    a = p.a
    stem = f"{a.name}-{p.label or 'default'}-np{ranks}-{scaling or 'fixed'}-round{rnd}"
    record = o.out / "raw" / f"{stem}.json" if a.json_option else None
    argv = [str(o.bindir / p.binary), *a.args(size), *p.argv_tail]
    if record is not None:
        argv += [a.json_option, str(record)]
    cmd, env = launch_command(o, p.suite, ranks, argv)
    load = load_average()
    log = o.out / "logs" / f"{stem}.log"
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                             timeout=o.timeout + 60, check=False)
        text, rc = out.stdout + out.stderr, out.returncode
    except subprocess.TimeoutExpired as e:  # its output comes as bytes, text=True or not
        text = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                       for x in (e.stdout, e.stderr))
        rc = "timeout"
    log.write_text(f"$ {shlex.join(cmd)}\n{text}")
    figures = a.parse(a, text, record) if rc == 0 else {}
    if rc != 0 or not figures or (a.validates and a.validates not in text):
        tail = "".join(text.splitlines(True)[-20:])
        fail(f"{p.name} at {ranks} ranks failed (exit status {rc}, "
             f"{'figures read' if figures else 'no figures'}); log {log}:\n{tail}")
    for f in a.figures:
        name = p.name if len(a.figures) == 1 else f"{p.name}:{f.metric}"
        results.add({"kind": "app", "name": name, "suite": p.suite,
                     "peer_of": a.name if p.suite != "oneside" else None, "family": a.name,
                     "ranks": ranks, "scaling": scaling, "size": size, "metric": f.metric,
                     "unit": f.unit, "better": f.better}, figures[f.metric], load)


def app_steps(o: options, a: app, variants: list[str] | None, ranks: list[int],
              scalings: list[str | None], base: dict | None, results: app_results
              ) -> list[step]:
    """Rounds of every program of `a` (rotated), per scaling mode and rank count."""
    progs = app_programs(a, o, variants)
    steps = []
    for scaling in scalings:
        for n in ranks:
            size = a.size(scaling or "strong", n, base)
            for rnd in range(1, o.repetitions + 1):
                k = (rnd - 1) % len(progs)
                for p in progs[k:] + progs[:k]:
                    cmd, _ = launch_command(o, p.suite, n, [str(o.bindir / p.binary),
                                                             *a.args(size), *p.argv_tail])

                    def run(p=p, n=n, size=size, scaling=scaling, rnd=rnd) -> None:
                        _launch_app(o, p, n, size, scaling, rnd, results)
                    steps.append(step(
                        f"{p.name} np{n}{' ' + scaling if scaling else ''} round "
                        f"{rnd}/{o.repetitions}", shlex.join(cmd),
                        startup_seconds(o) + a.seconds(size, n, o.cores), run))
    return steps


# ---- running a plan -------------------------------------------------------------------


def fmt_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def print_plan(steps: list[step], file=None) -> None:
    file = file or sys.stdout
    total = sum(s.estimate for s in steps)
    for i, s in enumerate(steps, 1):
        print(f"{i:4d}. ~{fmt_duration(s.estimate)}  {s.label}\n        {s.command}", file=file)
    print(f"{len(steps)} launches, estimated {fmt_duration(total)} in all (rough: from "
          "benchmark counts and min_time, and app work at a guessed rate)", file=file)


def run_steps(steps: list[step], clock: Callable[[], float] = time.monotonic,
              file=None) -> None:
    """Runs the steps with one progress line each: elapsed time and what is left, the plan's
    estimate of the rest scaled by how the estimates compared with the time taken so far."""
    file = file or sys.stderr
    start = clock()
    total = sum(s.estimate for s in steps)
    done_estimate = 0.0
    for i, s in enumerate(steps, 1):
        t0 = clock()
        s.action()
        now = clock()
        done_estimate += s.estimate
        elapsed = now - start
        pace = elapsed / done_estimate if done_estimate > 0 else 1.0
        left = (total - done_estimate) * pace
        print(f"[oneside-bench] {i}/{len(steps)} {s.label}: {now - t0:.1f} s; elapsed "
              f"{fmt_duration(elapsed)}, left ~{fmt_duration(left)} (load {load_average():.2f})",
              file=file, flush=True)


def new_record(command: str, o: options, study: str | None, opts: dict) -> dict:
    return {"schema": schema.SCHEMA, "command": command, "study": study,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": environment.machine(), "versions": environment.versions(o.build, o.mpirun),
            "settings": environment.settings(o.oneside_settings()),
            "load_average_start": None, "options": opts, "rows": []}


def write_record(record: dict, path: Path) -> None:
    errors = schema.validate(record)
    if errors:  # a bug of this tool, not of the measurement: say so and keep the file
        print("oneside-bench: warning: the record does not match the schema:\n  "
              + "\n  ".join(errors[:20]), file=sys.stderr)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"[oneside-bench] wrote {path}", file=sys.stderr)


def execute(command: str, o: options, study: str | None, opts: dict, steps: list[step],
            finish: Callable[[], list[dict]], dry_run: bool) -> dict | None:
    """Prints the plan (dry run) or runs it and writes <out>/result.json."""
    if dry_run:
        print_plan(steps)
        return None
    (o.out / "raw").mkdir(parents=True, exist_ok=True)
    (o.out / "logs").mkdir(parents=True, exist_ok=True)
    record = new_record(command, o, study, opts)
    load = load_average()
    record["load_average_start"] = None if load != load else load
    print(f"[oneside-bench] {len(steps)} launches, estimated "
          f"{fmt_duration(sum(s.estimate for s in steps))}", file=sys.stderr, flush=True)
    run_steps(steps)
    record["rows"] = finish()
    write_record(record, o.out / "result.json")
    return record

