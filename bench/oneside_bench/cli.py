"""oneside-bench's command line: micro, apps, scale, report, compare (see bench/README.md)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from . import compare as compare_mod
from . import report as report_mod
from . import runner, schema, study
from .apps import APPS
from .gbench import GROUPS
from .util import fail


def _common(p: argparse.ArgumentParser, out_default: str) -> None:
    p.add_argument("--build-dir", type=Path, default=Path("build/release"),
                   help="a built oneside build directory (default: build/release)")
    p.add_argument("--out", type=Path, default=Path(out_default),
                   help=f"output directory: result.json, report.md, plots/, raw/, logs/ "
                   f"(default: {out_default})")
    p.add_argument("--repetitions", type=int, default=None,
                   help="interleaved launches of every program per configuration (default 3)")
    p.add_argument("--transport", choices=("shm", "mpi"), default=None,
                   help="shm: oneside-run on one node (default); mpi: every rank a node of its "
                   "own over MPI (ONESIDE_TRANSPORT=mpi) under --launcher, by default mpirun "
                   "over TCP")
    p.add_argument("--launcher", default=None,
                   help='the MPI launcher with its placement flags, e.g. "mpirun --map-by node" '
                   "or srun (implies --transport mpi; MPI peers run under it too)")
    p.add_argument("--mpirun", default="mpirun", help="Open MPI's launcher (default: mpirun)")
    p.add_argument("--oneside-env", action="append", default=[], metavar="ONESIDE_NAME=VALUE",
                   help="a setting for oneside's ranks (repeatable); recorded")
    p.add_argument("--no-mpi", action="store_true", help="leave the MPI peers out")
    p.add_argument("--timeout", type=int, default=None, help="seconds per launch (default 600)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan and its estimated duration; run nothing")
    p.add_argument("--no-plots", action="store_true", help="markdown report only")


def _micro_args(p: argparse.ArgumentParser, default: str = "all") -> None:
    p.add_argument("--families", nargs="+", choices=list(GROUPS), default=None,
                   help=f"micro-benchmark families (default: {default})")
    p.add_argument("--filter", default=None, help="a --benchmark_filter instead of families")
    p.add_argument("--min-time", type=float, default=0.1,
                   help="--benchmark_min_time of every run, seconds (default 0.1)")


def _app_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--apps", nargs="+", choices=list(APPS), default=None,
                   help="apps to run (default: all)")
    p.add_argument("--variants", nargs="+", default=None, metavar="APP:VARIANT",
                   help="only these variants (default: every variant each binary offers)")
    p.add_argument("--size", action="append", default=[], metavar="APP:KEY=VALUE",
                   help="a problem size parameter (repeatable), e.g. stencil:n=4000; "
                   + "; ".join(f"{a.name}: {', '.join(f'{k}={v}' for k, v in a.base.items())}"
                               for a in APPS.values()))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="oneside-bench",
        description="Scaling studies over oneside's micro-benchmarks and mini-apps with their "
        "MPI peers: one JSON record per run, markdown and PNG reports, run-to-run comparison.")
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("micro", help="Google Benchmark families interleaved with their peers")
    _common(m, "oneside-bench-results/micro")
    _micro_args(m)
    m.add_argument("--ranks", type=int, nargs="+", default=[2], help="rank counts (default 2)")
    a = sub.add_parser("apps", help="the mini-apps and their peers, interleaved")
    _common(a, "oneside-bench-results/apps")
    _app_args(a)
    a.add_argument("--ranks", type=int, nargs="+", default=[2], help="rank counts (default 2)")
    s = sub.add_parser("scale", help="strong and weak scaling over rank counts (a study file "
                       "or the command line)")
    _common(s, "oneside-bench-results/scale")
    _micro_args(s, "none without --study; with --families or --filter, at every rank count")
    s.add_argument("--study", type=Path, default=None,
                   help="a study definition (bench/studies/*.toml, or JSON)")
    _app_args(s)
    s.add_argument("--ranks", type=int, nargs="+", default=None,
                   help="rank counts without --study (default 1 2 4)")
    s.add_argument("--scaling", nargs="+", choices=("strong", "weak"),
                   default=None, help="modes without --study (default both)")
    r = sub.add_parser("report", help="markdown and plots from result.json file(s)")
    r.add_argument("results", nargs="+", type=Path)
    r.add_argument("--out", type=Path, default=None,
                   help="output directory (default: the first result's directory)")
    r.add_argument("--no-plots", action="store_true")
    c = sub.add_parser("compare", help="OLD NEW: flag the rows that changed beyond the noise")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--threshold", type=float, default=0.05,
                   help="smallest relative change worth a flag, besides the noise (default 0.05)")
    c.add_argument("--all", action="store_true", help="list every row, not only the flagged")
    c.add_argument("--fail-on-change", action="store_true",
                   help="exit with status 1 when a row is flagged slower")
    args = p.parse_args(argv)
    for kv in getattr(args, "oneside_env", []):
        if "=" not in kv or not kv.startswith("ONESIDE_"):
            p.error(f"--oneside-env {kv}: expected ONESIDE_NAME=VALUE")
    if any(n < 1 for n in getattr(args, "ranks", None) or []):
        p.error("--ranks must be positive")
    return args


def load_record(path: Path) -> dict:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        fail(f"cannot read {path}: {e}")
    errors = schema.validate(record)
    if errors:
        fail(f"{path} does not match the schema:\n  " + "\n  ".join(errors[:20]))
    return record


def _options(args: argparse.Namespace, st: dict | None) -> runner.options:
    st = st or {}
    launcher = shlex.split(args.launcher or st.get("launcher") or "")
    transport = args.transport or st.get("transport") or ("mpi" if launcher else "shm")
    if launcher and transport == "shm":
        fail("--launcher starts ranks under MPI: use it with --transport mpi")
    build = args.build_dir.resolve()
    if not (build / "CMakeCache.txt").is_file():
        fail(f"{build} is not a CMake build directory (no CMakeCache.txt); configure and build "
             "oneside first, e.g. cmake --preset release && cmake --build build/release")
    return runner.options(
        build=build, out=args.out.resolve(), transport=transport, launcher=launcher,
        mpirun=args.mpirun, timeout=args.timeout or st.get("timeout", 600),
        oneside_env=[*st.get("oneside_env", []), *args.oneside_env],
        repetitions=args.repetitions or st.get("repetitions", 3), no_mpi=args.no_mpi)


def _app_choices(args: argparse.Namespace) -> dict:
    """app -> {"variants", "size"} from --apps, --variants and --size."""
    chosen = {name: {"variants": None, "size": dict(APPS[name].base)}
              for name in args.apps or list(APPS)}
    for item in args.variants or []:
        name, _, variant = item.partition(":")
        if name not in chosen or not variant:
            fail(f"--variants {item}: expected APP:VARIANT with APP among {', '.join(chosen)}")
        chosen[name]["variants"] = (chosen[name]["variants"] or []) + [variant]
    for item in args.size:
        name, _, kv = item.partition(":")
        key, _, value = kv.partition("=")
        if name not in chosen or key not in APPS[name].base or not value.isdigit():
            fail(f"--size {item}: expected APP:KEY=INTEGER (keys of {name}: "
                 f"{', '.join(APPS[name].base) if name in APPS else '?'})")
        chosen[name]["size"][key] = int(value)
    return chosen


def _finish_report(args: argparse.Namespace, o: runner.options, record: dict | None) -> None:
    if record is not None:
        report_mod.build([record], ["result.json"], o.out, plots=not args.no_plots)
        print(f"[oneside-bench] wrote {o.out / 'report.md'}", file=sys.stderr)


def cmd_micro(args: argparse.Namespace) -> None:
    o = _options(args, None)
    records = []
    steps = runner.micro_steps(o, args.ranks, args.families, args.min_time, args.filter,
                               records)
    opts = {"repetitions": o.repetitions, "ranks": args.ranks, "min_time": args.min_time,
            "families": args.families or "all", "filter": args.filter or "",
            "launcher": shlex.join(o.launcher) or "default"}
    record = runner.execute("micro", o, None, opts, steps,
                            lambda: runner.micro_rows(records, o), args.dry_run)
    _finish_report(args, o, record)


def _app_plan(o: runner.options, apps: dict, scalings: list[str | None],
              results: runner.app_results, default_ranks: list[int]) -> list[runner.step]:
    steps = []
    for name, spec in apps.items():
        steps += runner.app_steps(o, APPS[name], spec["variants"],
                                  spec.get("ranks", default_ranks),
                                  spec.get("scaling", scalings), spec["size"], results)
    return steps


def cmd_apps(args: argparse.Namespace) -> None:
    o = _options(args, None)
    results = runner.app_results()
    apps = _app_choices(args)
    steps = _app_plan(o, apps, [None], results, args.ranks)
    opts = {"repetitions": o.repetitions, "ranks": args.ranks, "apps": ", ".join(apps),
            "launcher": shlex.join(o.launcher) or "default"}
    record = runner.execute("apps", o, None, opts, steps, lambda: results.to_rows(o),
                            args.dry_run)
    _finish_report(args, o, record)


def cmd_scale(args: argparse.Namespace) -> None:
    st = None
    given = [f"--{k.replace('_', '-')}" for k in ("apps", "variants", "size", "families",
                                                   "filter", "ranks", "scaling")
             if getattr(args, k)]
    if args.study is not None and given:
        fail(f"{', '.join(given)}: the study says what runs (edit it, or leave --study out)")
    args.ranks = args.ranks or [1, 2, 4]
    args.scaling = args.scaling or ["strong", "weak"]
    if args.study is not None:
        try:
            st = study.load(args.study)
        except study.study_error as e:
            fail(str(e))
        if args.out == Path("oneside-bench-results/scale"):
            args.out = Path("oneside-bench-results") / st["name"]
    o = _options(args, st)
    records: list = []
    results = runner.app_results()
    steps = []
    if st is not None:
        micro = st["micro"] or []
        apps = st["apps"]
        ranks = st["ranks"]
    else:
        micro = []
        if args.families or args.filter:
            micro = [{"ranks": args.ranks, "families": args.families,
                      "min_time": args.min_time, "filter": args.filter}]
        apps = _app_choices(args)
        ranks = args.ranks
    # Rank count by rank count: the micro families, then every app (both interleaved inside).
    for n in sorted(set(ranks).union(*(m["ranks"] for m in micro))):
        for m in micro:
            if n in m["ranks"]:
                steps += runner.micro_steps(o, [n], m["families"], m["min_time"], m["filter"],
                                            records)
        for name, spec in apps.items():
            if n in spec.get("ranks", ranks):
                steps += runner.app_steps(o, APPS[name], spec["variants"], [n],
                                          spec.get("scaling", args.scaling), spec["size"],
                                          results)
    opts = {"repetitions": o.repetitions, "ranks": ranks, "apps": ", ".join(apps),
            "micro": "; ".join(m["filter"] or ", ".join(m["families"] or ["all"])
                               for m in micro) or "none",
            "launcher": shlex.join(o.launcher) or "default"}

    def finish() -> list[dict]:
        return runner.micro_rows(records, o) + results.to_rows(o)
    record = runner.execute("scale", o, st["name"] if st else None, opts, steps, finish,
                            args.dry_run)
    _finish_report(args, o, record)


def cmd_report(args: argparse.Namespace) -> None:
    records = [load_record(p) for p in args.results]
    out = (args.out or args.results[0].parent).resolve()
    report_mod.build(records, [str(p) for p in args.results], out, plots=not args.no_plots)
    print(f"[oneside-bench] wrote {out / 'report.md'}", file=sys.stderr)


def cmd_compare(args: argparse.Namespace) -> int:
    old, new = load_record(args.old), load_record(args.new)
    result = compare_mod.compare(old, new, args.threshold)
    print(compare_mod.markdown(result, str(args.old), str(args.new), args.threshold, args.all,
                               old, new), end="")
    slower = any(r["verdict"] == "slower" for r in result["rows"])
    return 1 if args.fail_on_change and slower else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command == "compare":
        return cmd_compare(args)
    {"micro": cmd_micro, "apps": cmd_apps, "scale": cmd_scale,
     "report": cmd_report}[args.command](args)
    return 0
