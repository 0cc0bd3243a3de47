#!/usr/bin/env python3
"""Tests of oneside-bench itself (ctest bench.tool): the schema, the report from a stored
record, compare's flagging, the plan of a dry run and the runner's launches, rows and progress
on fake programs. Runs in seconds; no benchmark runs. The stored record (data/tiny_scale.json)
is a real `oneside-bench scale` run of tiny sizes on a 2-core machine.

    python3 bench/tests/test_oneside_bench.py [-v]
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import stat
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
sys.path.insert(0, str(BENCH))

from oneside_bench import apps, cli, compare, gbench, report, runner, schema, study  # noqa: E402
from oneside_bench.util import differs, summary  # noqa: E402

FIXTURE = HERE / "data" / "tiny_scale.json"


def stored() -> dict:
    return json.loads(FIXTURE.read_text())


def find(record: dict, name: str, ranks: int, scaling: str | None = "strong") -> dict:
    rows = [r for r in record["rows"]
            if r["name"] == name and r["ranks"] == ranks and r["scaling"] == scaling]
    assert len(rows) == 1, (name, ranks, scaling, len(rows))
    return rows[0]


def set_values(row: dict, values: list[float]) -> None:
    row["values"] = values
    row.update(summary(values))


def write(path: Path, record: dict) -> Path:
    path.write_text(json.dumps(record))
    return path


class schema_test(unittest.TestCase):
    def test_the_stored_record_is_valid(self) -> None:
        record = stored()
        self.assertEqual(schema.validate(record), [])
        self.assertGreater(len(record["rows"]), 50)
        self.assertEqual({r["kind"] for r in record["rows"]}, {"micro", "app"})

    def test_each_kind_of_mistake_is_named(self) -> None:
        cases = [
            (lambda r: r.pop("machine"), "record: missing 'machine'"),
            (lambda r: r["versions"].pop("tbb"), "versions: missing 'tbb'"),
            (lambda r: r.update(schema="oneside-bench/0"), "schema 'oneside-bench/0'"),
            (lambda r: r["rows"][0].update(median=r["rows"][0]["median"] * 2),
             "rows[0]: median"),
            (lambda r: r["rows"][1].update(suite="upc"), "rows[1]: suite 'upc'"),
            (lambda r: r["rows"][2].update(values=[]), "rows[2]: no values"),
            (lambda r: r["rows"][3].update(ranks="2"), "rows[3]: 'ranks' is str"),
            (lambda r: r["rows"][4].update(better="more"), "rows[4]: better 'more'"),
            (lambda r: r["rows"].append(copy.deepcopy(r["rows"][5])), "a second row"),
            (lambda r: r["settings"].update(PATH="/bin"), "settings: 'PATH'"),
            (lambda r: r["rows"][6].update(extra=1), "rows[6]: unknown field 'extra'"),
            (lambda r: r["rows"][7].update(values=[1.0, float("nan")]), "finite numbers"),
        ]
        for mutate, expected in cases:
            record = stored()
            mutate(record)
            errors = schema.validate(record)
            self.assertTrue(any(expected in e for e in errors), (expected, errors))
        self.assertEqual(schema.validate([]), ["the record is not a JSON object"])

    def test_report_refuses_an_invalid_record(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            record = stored()
            record["rows"][0].pop("values")
            path = write(Path(tmp) / "bad.json", record)
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit):
                cli.main(["report", str(path), "--out", tmp, "--no-plots"])
            self.assertIn("does not match the schema", err.getvalue())
            self.assertIn("rows[0]: missing 'values'", err.getvalue())
            self.assertFalse((Path(tmp) / "report.md").exists())


class report_test(unittest.TestCase):
    def test_markdown_from_the_stored_record(self) -> None:
        record = stored()
        # A clear difference gets its ratio; an overlapping one is marked instead.
        set_values(find(record, "stencil/fence", 2), [300.0, 310.0, 305.0])
        set_values(find(record, "stencil/pscw", 2), [150.0, 260.0, 200.0])
        set_values(find(record, "stencil/mpi_rma", 2), [200.0, 205.0, 210.0])
        with tempfile.TemporaryDirectory() as tmp:
            text = report.build([record], ["tiny"], Path(tmp), plots=False)
            self.assertEqual(text, (Path(tmp) / "report.md").read_text())
        self.assertIn("## Micro-benchmarks", text)
        self.assertIn("### stencil, shm transport, strong scaling", text)
        self.assertIn("### stencil, shm transport, weak scaling", text)
        fence = next(x for x in text.splitlines() if x.startswith("| 2 | n 400")
                     and "stencil/fence" in x and "strong" not in x
                     and "305" in x)
        self.assertIn("1.49× mpi_rma", fence)  # 305 / 205
        pscw = next(x for x in text.splitlines() if "stencil/pscw (oneside) | 200 " in x)
        self.assertIn("within noise (55% / 5%) mpi_rma", pscw)
        self.assertNotIn("0.98×", pscw)
        # Speedup and efficiency against 1 rank.
        self.assertIn("| program | 1 ranks | 2 ranks |", text)
        barrier = next(x for x in text.splitlines() if x.startswith("| barrier |"))
        self.assertIn("mpi_barrier", barrier)
        self.assertNotIn("## Plots", text)

    def test_plots_when_matplotlib_is_there(self) -> None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("matplotlib is not installed (python3-matplotlib)")
        with tempfile.TemporaryDirectory() as tmp:
            text = report.build([stored()], ["tiny"], Path(tmp), plots=True)
            plots = sorted(p.name for p in (Path(tmp) / "plots").glob("*.png"))
        for name in ("scaling-stencil-strong-shm.png", "scaling-stencil-weak-shm.png",
                     "ratio-transpose-strong-shm.png", "size-put_bandwidth-np2-shm.png"):
            self.assertIn(name, plots)
            self.assertIn(f"(plots/{name})", text)

    def test_scaling_curves(self) -> None:
        rows = [dict(find(stored(), "stencil/fence", n)) for n in (1, 2)]
        set_values(rows[0], [100.0])
        set_values(rows[1], [150.0])
        (name, points), = report.scaling_curves(rows)
        self.assertEqual(name, "stencil/fence (oneside)")
        self.assertEqual(points, {1: (1.0, 1.0), 2: (1.5, 0.75)})
        # Lower is better (times): the speedup inverts.
        for r in rows:
            r["better"] = "lower"
        self.assertEqual(report.scaling_curves(rows)[0][1][2], (1 / 1.5, 1 / 3))


class compare_test(unittest.TestCase):
    def same_commit(self) -> dict:
        """A second run of the same build: every row's repetitions in another order, each
        moved inside the row's own range, and the whole machine 3% slower."""
        record = stored()
        for row in record["rows"]:
            lo, hi = row["min"], row["max"]
            values = [hi - (v - lo) * 0.9 for v in reversed(row["values"])]
            set_values(row, [v * (1.03 if row["better"] == "lower" else 1 / 1.03)
                             for v in values])
        return record

    def test_two_runs_of_one_commit_flag_nothing(self) -> None:
        result = compare.compare(stored(), self.same_commit())
        self.assertEqual(len(result["rows"]), len(stored()["rows"]))
        self.assertEqual([r["key"] for r in result["rows"] if r["verdict"]], [])
        self.assertEqual(result["only_old"], [])
        self.assertEqual(result["only_new"], [])

    def test_a_slowed_row_is_the_only_one_flagged(self) -> None:
        new = self.same_commit()
        slowed = find(new, "stencil/fence", 2)
        set_values(slowed, [v / 2 for v in slowed["values"]])  # a rate: half the speed
        latency = find(new, "get_bandwidth/16384", 2, None)
        set_values(latency, [v * 3 for v in latency["values"]])  # a time: three times longer
        result = compare.compare(stored(), new)
        flagged = {r["key"]: r["verdict"] for r in result["rows"] if r["verdict"]}
        self.assertEqual(flagged, {schema.row_key(slowed): "slower",
                                   schema.row_key(latency): "slower"})
        text = compare.markdown(result, "old", "new", 0.05)
        self.assertIn("2 changed beyond", text)
        self.assertIn(schema.row_key(slowed), text)

    def test_faster_is_flagged_faster_and_missing_rows_are_listed(self) -> None:
        new = stored()
        row = find(new, "transpose/mpi1", 2)
        set_values(row, [v * 4 for v in row["values"]])
        new["rows"].remove(find(new, "gups/aggregated", 1))
        result = compare.compare(stored(), new)
        self.assertEqual([(r["key"], r["verdict"]) for r in result["rows"] if r["verdict"]],
                         [(schema.row_key(row), "faster")])
        self.assertEqual(result["only_old"], [schema.row_key(find(stored(), "gups/aggregated",
                                                                   1))])

    def test_the_command_and_its_exit_status(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            old = write(Path(tmp) / "old.json", stored())
            same = write(Path(tmp) / "same.json", self.same_commit())
            slow_record = self.same_commit()
            slowed = find(slow_record, "gups/aggregated", 2)
            set_values(slowed, [v / 10 for v in slowed["values"]])
            slow = write(Path(tmp) / "slow.json", slow_record)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(cli.main(["compare", str(old), str(same),
                                           "--fail-on-change"]), 0)
                self.assertEqual(cli.main(["compare", str(old), str(slow),
                                           "--fail-on-change"]), 1)
                self.assertEqual(cli.main(["compare", str(old), str(slow)]), 0)
            text = out.getvalue()
            self.assertIn("0 changed beyond", text)
            self.assertIn("- old: oneside 4010f4de067a (Release, GNU 12.2.0", text)
            self.assertIn("| gups/aggregated [oneside] np2 shm strong", text)
            self.assertIn("**slower**", text)

    def test_the_noise_rule(self) -> None:
        a = summary([100.0, 110.0, 105.0])
        self.assertFalse(differs(a, summary([104.0, 120.0, 112.0])))  # overlapping ranges
        self.assertTrue(differs(a, summary([150.0, 160.0, 155.0])))
        # Disjoint, but closer than the two spreads together (10% + 24%).
        self.assertFalse(differs(a, summary([111.0, 140.0, 125.0])))
        # One value each: only the threshold counts.
        self.assertFalse(differs(summary([100.0]), summary([104.0]), threshold=0.05))
        self.assertTrue(differs(summary([100.0]), summary([106.0]), threshold=0.05))


# ---- fake programs: the runner's launches without running anything real -----------------

FAKE_LAUNCHER = r'''#!/usr/bin/env python3
# oneside-run or mpirun: runs the program (the first argument that is a file) with
# FAKE_RANKS set, after logging its command line.
import os, sys
args = sys.argv[1:]
n = args[args.index("-n") + 1]
prog = next(i for i, a in enumerate(args) if os.path.isfile(a) and a.startswith("/"))
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(os.path.basename(sys.argv[0]) + " " + " ".join(args) + "\n")
os.environ["FAKE_RANKS"] = n
os.execv(args[prog], args[prog:])
'''
FAKE_STENCIL = r'''#!/usr/bin/env python3
# A stencil printing PRK's lines: rate = 100 x ranks (+10 for pscw, -50 for the MPI peer).
import os, sys
if "--help" in sys.argv:
    print("  --variant V      halo synchronization: fence, pscw (default fence)")
    sys.exit(0)
rate = 100.0 * int(os.environ.get("FAKE_RANKS", "1"))
rate += 10 if "pscw" in sys.argv else 0
rate -= 50 if os.path.basename(sys.argv[0]).startswith("mpi_") else 0
print("Solution validates")
print(f"Rate (MFlops/s): {rate:.6f}  Avg time (s): 0.001")
'''
FAKE_GBENCH = r'''#!/usr/bin/env python3
# oneside_micro_bench or oneside_mpi_peers: lists and "measures" two benchmarks.
import json, os, sys
mpi = "mpi" in os.path.basename(sys.argv[0])
names = (["mpi_barrier", "mpi_put_bandwidth/1024/manual_time"] if mpi
         else ["barrier", "put_bandwidth/1024/manual_time"])
if "--benchmark_list_tests=true" in sys.argv:
    print("\n".join(names))
    sys.exit(0)
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--benchmark_out="))
times = [2000.0, 400.0] if mpi else [1000.0, 100.0]
json.dump({"context": {}, "benchmarks": [
    {"name": n, "run_type": "iteration", "real_time": t, "time_unit": "ns"}
    for n, t in zip(names, times)]}, open(out, "w"))
'''


class fake_build:
    def __init__(self, tmp: Path) -> None:
        self.dir = tmp / "build"
        self.bin = self.dir / "bin"
        self.bin.mkdir(parents=True)
        (self.dir / "CMakeCache.txt").write_text("CMAKE_BUILD_TYPE:STRING=Release\n")
        for name, text in (("oneside-run", FAKE_LAUNCHER), ("mpirun", FAKE_LAUNCHER),
                           ("stencil", FAKE_STENCIL), ("mpi_stencil", FAKE_STENCIL),
                           ("oneside_micro_bench", FAKE_GBENCH),
                           ("oneside_mpi_peers", FAKE_GBENCH)):
            path = self.bin / name
            path.write_text(text.replace("/usr/bin/env python3", sys.executable, 1))
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        self.log = tmp / "launches.log"
        self.log.touch()
        self.out = tmp / "out"

    def main(self, *args: str) -> str:
        """Runs oneside-bench with the fake build; returns what it printed on stdout."""
        out, err = io.StringIO(), io.StringIO()
        env = {"FAKE_LOG": str(self.log), "ONESIDE_FAKE_SETTING": "1"}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                cli.main([*args, "--build-dir", str(self.dir), "--out", str(self.out),
                          "--mpirun", str(self.bin / "mpirun"), "--no-plots"])
        finally:
            self.stderr = err.getvalue()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        return out.getvalue()

    def launches(self) -> list[str]:
        return self.log.read_text().splitlines()


class runner_test(unittest.TestCase):
    def test_dry_run_prints_the_plan_and_runs_nothing(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            fb = fake_build(Path(tmp))
            text = fb.main("apps", "--apps", "stencil", "--ranks", "1", "2",
                           "--repetitions", "2", "--dry-run")
            self.assertEqual(fb.launches(), [])
            self.assertFalse(fb.out.exists())
        lines = [x for x in text.splitlines() if x[:5].strip().rstrip(".").isdigit()]
        # (2 variants + the MPI peer) x 2 rank counts x 2 rounds, rotated per round.
        self.assertEqual(len(lines), 12)
        self.assertEqual([x.split()[2] for x in lines[:6]],
                         ["stencil/fence", "stencil/pscw", "stencil/mpi_rma",
                          "stencil/pscw", "stencil/mpi_rma", "stencil/fence"])
        self.assertIn("12 launches, estimated 0:", text)
        self.assertIn("oneside-run -n 2 --timeout 600", text)
        self.assertIn("mpirun -n 1 --timeout 600 --bind-to core --mca pml ob1", text)

    def test_apps_runs_interleaved_and_records_every_launch(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            fb = fake_build(Path(tmp))
            fb.main("apps", "--apps", "stencil", "--ranks", "2", "--repetitions", "3",
                    "--oneside-env", "ONESIDE_HANG_TIMEOUT=30")
            record = json.loads((fb.out / "result.json").read_text())
            md = (fb.out / "report.md").read_text()
            launches = fb.launches()
        self.assertEqual(schema.validate(record), [])
        self.assertEqual(len(launches), 9)
        self.assertEqual(record["settings"], {"ONESIDE_FAKE_SETTING": "1",
                                              "ONESIDE_HANG_TIMEOUT": "30",
                                              "ONESIDE_TRANSPORT": "shm"})
        rows = {r["name"]: r for r in record["rows"]}
        self.assertEqual(sorted(rows), ["stencil/fence", "stencil/mpi_rma", "stencil/pscw"])
        self.assertEqual(rows["stencil/pscw"]["values"], [210.0] * 3)
        self.assertEqual(rows["stencil/mpi_rma"]["values"], [150.0] * 3)
        self.assertEqual(rows["stencil/mpi_rma"]["peer_of"], "stencil")
        self.assertEqual(rows["stencil/fence"]["binding"], "core")
        self.assertEqual(len(rows["stencil/fence"]["load_average"]), 3)
        self.assertIn("1.33× mpi_rma", md)  # 200 / 150, no spread

    def test_scale_weak_grows_the_problem_and_micro_rows_pair_with_peers(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "s.json"
            path.write_text(json.dumps({
                "name": "fake", "ranks": [1, 4], "repetitions": 1,
                "micro": {"ranks": [4], "families": ["barrier"], "min_time": 0.01},
                "apps": {"stencil": {"variants": ["fence"], "scaling": ["weak"],
                                     "size": {"n": 100}}}}))
            fb = fake_build(Path(tmp))
            fb.main("scale", "--study", str(path))
            record = json.loads((fb.out / "result.json").read_text())
            md = (fb.out / "report.md").read_text()
        self.assertEqual(schema.validate(record), [])
        self.assertEqual(record["study"], "fake")
        sizes = {(r["name"], r["ranks"]): r["size"]["n"] for r in record["rows"]
                 if r["kind"] == "app"}
        self.assertEqual(sizes, {("stencil/fence", 1): 100, ("stencil/fence", 4): 200,
                                 ("stencil/mpi_rma", 1): 100, ("stencil/mpi_rma", 4): 200})
        micro = {(r["name"], r["suite"]): r for r in record["rows"] if r["kind"] == "micro"}
        self.assertEqual(micro[("mpi_barrier", "mpi")]["peer_of"], "barrier")
        self.assertEqual(micro[("barrier", "oneside")]["values"], [1000.0])
        self.assertIn("| barrier | 1 µs | 0% | mpi_barrier | 2 µs | 2.00× |", md)
        self.assertIn("| stencil/fence (oneside) | 1.00× (100%) | 4.00× (100%) |", md)

    def test_scale_from_the_command_line(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            fb = fake_build(Path(tmp))
            text = fb.main("scale", "--apps", "stencil", "--variants", "stencil:pscw",
                           "--ranks", "2", "4", "--scaling", "strong", "--families", "barrier",
                           "--repetitions", "1", "--dry-run")
        labels = [x.split(None, 2)[2] for x in text.splitlines()
                  if x[:5].strip().rstrip(".").isdigit()]
        self.assertEqual(labels, [
            "micro barrier oneside np2 rep 1/1", "micro barrier mpi np2 rep 1/1",
            "stencil/pscw np2 strong round 1/1", "stencil/mpi_rma np2 strong round 1/1",
            "micro barrier oneside np4 rep 1/1", "micro barrier mpi np4 rep 1/1",
            "stencil/pscw np4 strong round 1/1", "stencil/mpi_rma np4 strong round 1/1"])

    def test_micro_tables_run_each_at_its_own_rank_counts(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "s.toml"
            path.write_text('name = "two"\nranks = [2, 4]\nrepetitions = 1\n'
                            '[[micro]]\nfamilies = ["barrier"]\n'
                            '[[micro]]\nranks = [2]\nfamilies = ["osu_bw"]\n')
            fb = fake_build(Path(tmp))
            text = fb.main("scale", "--study", str(path), "--dry-run")
        labels = [x.split(None, 2)[2] for x in text.splitlines()
                  if x[:5].strip().rstrip(".").isdigit()]
        self.assertEqual(labels, [
            "micro barrier oneside np2 rep 1/1", "micro barrier mpi np2 rep 1/1",
            "micro osu_bw oneside np2 rep 1/1", "micro osu_bw mpi np2 rep 1/1",
            "micro barrier oneside np4 rep 1/1", "micro barrier mpi np4 rep 1/1"])

    def test_a_study_is_not_mixed_with_command_line_choices(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            fb = fake_build(Path(tmp))
            with self.assertRaises(SystemExit):
                fb.main("scale", "--study", str(BENCH / "studies" / "node.toml"), "--ranks", "2",
                        "--apps", "gups", "--dry-run")
            self.assertIn("--apps, --ranks: the study says what runs", fb.stderr)

    def test_a_failed_launch_stops_with_its_log(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            fb = fake_build(Path(tmp))
            (fb.bin / "stencil").write_text(FAKE_STENCIL.replace(
                'print("Solution validates")', 'print("verification failed"); sys.exit(3)'))
            with self.assertRaises(SystemExit):
                fb.main("apps", "--apps", "stencil", "--ranks", "2", "--repetitions", "1")
            self.assertIn("stencil/fence at 2 ranks failed (exit status 3", fb.stderr)
            self.assertIn("verification failed", fb.stderr)
            self.assertFalse((fb.out / "result.json").exists())

    def test_progress_lines_estimate_what_is_left(self) -> None:
        now = [0.0]

        def advance() -> None:
            now[0] += 2.0
        steps = [runner.step(f"s{i}", "cmd", est, advance)
                 for i, est in enumerate((1.0, 1.0, 2.0), 1)]
        err = io.StringIO()
        runner.run_steps(steps, clock=lambda: now[0], file=err)
        lines = err.getvalue().splitlines()
        self.assertEqual(len(lines), 3)
        # Twice as slow as estimated so far: the rest takes twice its estimate.
        self.assertIn("1/3 s1: 2.0 s; elapsed 0:02, left ~0:06", lines[0])
        self.assertIn("2/3 s2: 2.0 s; elapsed 0:04, left ~0:04", lines[1])
        self.assertIn("3/3 s3: 2.0 s; elapsed 0:06, left ~0:00", lines[2])

    def test_network_commands(self) -> None:
        o = runner.options(build=Path("/b"), out=Path("/o"), transport="mpi",
                           launcher=["srun", "--mpi=pmix"], oneside_env=["ONESIDE_X=1"])
        cmd, env = runner.launch_command(o, "oneside", 4, ["/b/bin/stencil"])
        self.assertEqual(cmd, ["srun", "--mpi=pmix", "-n", "4", "/b/bin/stencil"])
        self.assertEqual((env["ONESIDE_TRANSPORT"], env["ONESIDE_X"]), ("mpi", "1"))
        o.launcher = ["mpirun", "--map-by", "node"]
        cmd, _ = runner.launch_command(o, "oneside", 2, ["p"])
        self.assertEqual(cmd, ["mpirun", "--map-by", "node", "-n", "2", "-x",
                               "ONESIDE_TRANSPORT=mpi", "-x", "ONESIDE_X=1", "p"])
        cmd, _ = runner.launch_command(o, "mpi", 2, ["q"])
        self.assertEqual(cmd, ["mpirun", "--map-by", "node", "-n", "2", "q"])


FAKE_GRAPH500 = r"""#!/usr/bin/env python3
# A Graph500-style program: reference-format lines and a --json record of its own.
import json, sys
if "--help" in sys.argv:
    print("usage: graph500 [--scale S] [--json PATH]")
    sys.exit(0)
scale = int(sys.argv[sys.argv.index("--scale") + 1])
json.dump({"bfs": {"harmonic_mean_TEPS": 1.5e8 * scale}},
          open(sys.argv[sys.argv.index("--json") + 1], "w"))
print(f"bfs  harmonic_mean_TEPS: {1.2e8 * scale:.4e}")
"""


class new_app_test(unittest.TestCase):
    """An app printing Graph500's reference lines and writing a --json record is one entry of
    APPS (the graph apps of issue 22 are added so)."""

    def graph500(self, parse=apps.parse_figures) -> apps.app:
        return apps.app(
            "graph500", "graph500", (), args=lambda s: ["--scale", str(s["scale"])],
            base={"scale": 10}, weak=lambda s, r: {**s, "scale": s["scale"] + apps.log2_ceil(r)},
            figures=(apps.figure("teps", r"bfs\s+harmonic_mean_TEPS:\s+(\S+)", "TEPS",
                                 "higher"),),
            work=lambda s: 2 ** s["scale"] / 1e6, guess=10.0, validates=None, parse=parse,
            json_option="--json")

    def run_with(self, a: apps.app) -> dict:
        with tempfile.TemporaryDirectory() as tmp:
            fb = fake_build(Path(tmp))
            path = fb.bin / "graph500"
            path.write_text(FAKE_GRAPH500.replace("/usr/bin/env python3", sys.executable, 1))
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
            saved = dict(apps.APPS)
            apps.APPS["graph500"] = a
            try:
                fb.main("scale", "--apps", "graph500", "--ranks", "1", "2", "--scaling", "weak",
                        "--repetitions", "1")
            finally:
                apps.APPS.clear()
                apps.APPS.update(saved)
            record = json.loads((fb.out / "result.json").read_text())
        self.assertEqual(schema.validate(record), [])
        return {(r["name"], r["ranks"], r["size"]["scale"]): r["values"] for r in record["rows"]}

    def test_figures_from_stdout(self) -> None:
        self.assertEqual(self.run_with(self.graph500()),
                         {("graph500", 1, 10): [1.2e9], ("graph500", 2, 11): [1.32e9]})

    def test_figures_from_its_own_record(self) -> None:
        def from_record(a: apps.app, stdout: str, record: Path | None) -> dict[str, float]:
            del a, stdout
            return {"teps": json.loads(record.read_text())["bfs"]["harmonic_mean_TEPS"]}
        self.assertEqual(self.run_with(self.graph500(from_record)),
                         {("graph500", 1, 10): [1.5e9], ("graph500", 2, 11): [1.65e9]})


class gbench_test(unittest.TestCase):
    def test_osu_names_give_their_size(self) -> None:
        self.assertEqual(gbench.split_name("osu_put_bw/flush/1024/manual_time"),
                         ("osu_put_bw/flush/1024", "osu_put_bw", 1024))
        self.assertEqual(gbench.split_name("mpi_osu_acc_latency/pscw/64/manual_time"),
                         ("mpi_osu_acc_latency/pscw/64", "mpi_osu_acc_latency", 64))
        self.assertEqual(gbench.split_name("osu_fop_latency/fence/manual_time")[2], 8)
        self.assertEqual(runner.micro_peer_of("mpi", "mpi_osu_get_bw/lock/4"),
                         "osu_get_bw/lock/4")
        self.assertTrue(report.is_bandwidth("osu_get_bw"))
        self.assertFalse(report.is_bandwidth("osu_get_latency"))

    def test_the_sweeps_are_families_of_their_own(self) -> None:
        self.assertTrue(set(gbench.SWEEP_FAMILIES) <= set(gbench.GROUPS))
        ours, theirs = gbench.GROUPS["osu_atomic"]
        self.assertEqual(theirs, "^mpi_" + ours[1:])


class study_test(unittest.TestCase):
    def test_the_checked_in_studies_load(self) -> None:
        for name, transport in (("node", "shm"), ("network", "mpi")):
            s = study.load(BENCH / "studies" / f"{name}.toml")
            self.assertEqual((s["name"], s["transport"], s["ranks"]),
                             (name, transport, [1, 2, 4, 8]))
            self.assertEqual(set(s["apps"]), {"stencil", "transpose", "gups", "graph500", "pagerank",
                                          "cc"})
            self.assertIsNotNone(s["micro"])
        self.assertIn("mpirun", study.load(BENCH / "studies" / "network.toml")["launcher"])

    def test_micro_sets_of_the_checked_in_studies(self) -> None:
        s = study.load(BENCH / "studies" / "node.toml")
        self.assertEqual([m["ranks"] for m in s["micro"]], [[2, 4, 8], [2]])
        self.assertEqual(s["micro"][1]["families"], list(gbench.SWEEP_FAMILIES))

    def test_mistakes_are_named(self) -> None:
        cases = [('ranks = [0]\n[apps.stencil]\n', "ranks must be a list of positive"),
                 ('[apps.lulesh]\n', "unknown app 'lulesh'"),
                 ('[apps.stencil]\nsize = { m = 3 }\n', "size keys are n, radius, iterations"),
                 ('[apps.stencil]\nscaling = ["sideways"]\n', "scaling must list"),
                 ('[micro]\nfamilies = ["nope"]\n', "unknown families nope"),
                 ('[[micro]]\nranks = [2]\n[[micro]]\nfamilies = ["osu"]\n',
                  "unknown families osu"),
                 ('[[micro]]\nranks = [2]\nwhen = 3\n', "unknown keys when"),
                 ('transport = "udp"\n[apps.gups]\n', "transport 'udp'"),
                 ('name = "x"\n', "nothing to run"),
                 ('colour = "red"\n', "unknown keys colour"),
                 ('oneside_env = ["X=1"]\n[apps.gups]\n', "ONESIDE_NAME=VALUE")]
        with tempfile.TemporaryDirectory() as tmp:
            for text, expected in cases:
                path = Path(tmp) / "s.toml"
                path.write_text(text)
                with self.assertRaises(study.study_error) as e:
                    study.load(path)
                self.assertIn(expected, str(e.exception))


if __name__ == "__main__":
    unittest.main()
