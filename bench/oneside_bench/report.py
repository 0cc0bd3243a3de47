"""report: a record (or several, e.g. a node and a network study) as markdown, and PNG plots
when matplotlib is installed: latency and bandwidth against message size with the peers,
speedup and parallel efficiency against ranks with the ideal line, ratio bars against the
peers. A ratio is printed only where the two rows differ by more than their spreads
(util.differs); otherwise the row says "within noise" with both spreads."""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

from .util import differs


def fmt_value(row: dict, value: float | None = None) -> str:
    v = row["median"] if value is None else value
    if row["unit"] == "ns":
        if v < 1e3:
            return f"{v:.1f} ns" if v < 100 else f"{v:.0f} ns"
        return f"{v / 1e3:.3g} µs" if v < 1e6 else f"{v / 1e6:.3g} ms"
    return f"{v:.4g} {row['unit']}"


def fmt_size(size: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in size.items()) or "—"


def speed_ratio(ours: dict, theirs: dict) -> float:
    """How many times faster `ours` is than `theirs` (above 1: ours is faster)."""
    r = ours["median"] / theirs["median"]
    return r if ours["better"] == "higher" else 1 / r


def ratio_text(ours: dict, theirs: dict) -> str:
    """The speed ratio, or "within noise" with both spreads when the difference it would
    claim is smaller than the noise of the two rows."""
    if not differs(ours, theirs):
        return f"within noise ({ours['spread']:.0%} / {theirs['spread']:.0%})"
    return f"{speed_ratio(ours, theirs):.2f}×"


def is_bandwidth(family: str) -> bool:
    """Whether a family's figure reads as bandwidth (put_bandwidth, OSU's osu_put_bw)."""
    return "bandwidth" in family or family.endswith("_bw")


def _series(name: str) -> str:
    """A benchmark's name without its size: put_bandwidth/1024 -> put_bandwidth."""
    return re.sub(r"/\d+$", "", name)


def peers_of(row: dict, rows: list[dict]) -> list[dict]:
    """The peer rows measured beside `row`: same ranks, transport, scaling and size, whose
    peer_of names the row or its family."""
    return [p for p in rows
            if p["suite"] != "oneside" and p["peer_of"] in (row["name"], row["family"])
            and p["ranks"] == row["ranks"] and p["transport"] == row["transport"]
            and p["scaling"] == row["scaling"] and p["size"] == row["size"]]


class report:
    def __init__(self, records: list[dict], names: list[str]) -> None:
        self.records = records
        self.names = names
        self.rows = [r for rec in records for r in rec["rows"]]
        self.lines: list[str] = []
        self.images: list[tuple[str, str]] = []  # (title, file name)

    def out(self, text: str = "") -> None:
        self.lines.append(text)

    # ---- markdown ---------------------------------------------------------------------

    def header(self) -> None:
        self.out("# oneside-bench report")
        self.out()
        for rec, name in zip(self.records, self.names):
            m, v = rec["machine"], rec["versions"]
            mem = f"{m['memory_bytes'] / 2**30:.1f} GiB" if m.get("memory_bytes") else "?"
            load = rec.get("load_average_start")
            self.out(f"- **{rec.get('study') or rec['command']}** ({name}, {rec['created']}): "
                     f"{m['cpu']}, {m['cores']} cores, {mem}; {m['topology']}")
            self.out(f"  - oneside {v['oneside']} ({v['build_type']}), {v['compiler']}, "
                     f"oneTBB {v['tbb']}, {v['mpi']}, Python {v['python']}")
            settings = " ".join(f"{k}={x}" for k, x in rec["settings"].items()) or "none"
            opts = ", ".join(f"{k} {x}" for k, x in rec["options"].items())
            self.out(f"  - settings: {settings}; load average at start "
                     f"{'?' if load is None else f'{load:.2f}'}; {opts}")
        self.out()
        self.out("Figures are medians over the repetitions (launches interleaved with their "
                 "peers). \"vs\" columns are speed ratios (above 1: oneside is faster); a ratio "
                 "is given only when the two rows' ranges do not overlap and it is further "
                 "from 1 than the two spreads together ((max − min) / median), else the row "
                 "says \"within noise\" with the two spreads.")
        self.out()

    def micro(self) -> None:
        ours = [r for r in self.rows if r["kind"] == "micro" and r["suite"] == "oneside"]
        if not ours:
            return
        self.out("## Micro-benchmarks")
        self.out()
        for (transport, ranks) in sorted({(r["transport"], r["ranks"]) for r in ours}):
            self.out(f"### {ranks} ranks, {transport} transport")
            self.out()
            self.out("| benchmark | oneside | spread | peer | peer figure | vs peer |")
            self.out("|---|---:|---:|---|---:|---:|")
            for r in sorted((r for r in ours if (r["transport"], r["ranks"]) ==
                             (transport, ranks)),
                            key=lambda r: (_series(r["name"]), r["size"].get("bytes", 0))):
                bw = ""
                if "bytes" in r["size"] and is_bandwidth(r["family"]):
                    bw = f" ({r['size']['bytes'] / r['median']:.3g} GB/s)"
                peers = peers_of(r, self.rows) or [None]
                for p in peers:
                    cells = ("—", "—", "—") if p is None else (
                        p["name"], fmt_value(p), ratio_text(r, p))
                    self.out(f"| {r['name']} | {fmt_value(r)}{bw} | {r['spread']:.0%} | "
                             + " | ".join(cells) + " |")
            self.out()

    def apps(self) -> None:
        ours = [r for r in self.rows if r["kind"] == "app"]
        if not ours:
            return
        self.out("## Apps")
        self.out()
        groups = defaultdict(list)
        for r in ours:
            groups[(r["family"], r["transport"], r["scaling"] or "")].append(r)
        for (family, transport, scaling), rows in sorted(groups.items()):
            self.out(f"### {family}, {transport} transport" + (f", {scaling} scaling"
                                                               if scaling else ""))
            self.out()
            self.out("| ranks | size | program | median (min – max) | spread | vs peer |")
            self.out("|---:|---|---|---:|---:|---:|")
            for r in sorted(rows, key=lambda r: (r["ranks"], r["suite"] != "oneside",
                                                 r["name"])):
                vs = "; ".join(f"{ratio_text(r, p)} {p['name'].split('/')[-1]}"
                               for p in peers_of(r, self.rows)) if r["suite"] == "oneside" else ""
                self.out(f"| {r['ranks']} | {fmt_size(r['size'])} | {r['name']} "
                         f"({r['suite']}) | {fmt_value(r)} ({r['min']:.4g} – {r['max']:.4g}) | "
                         f"{r['spread']:.0%} | {vs or '—'} |")
            self.out()
            self.scaling_table(rows)

    def scaling_table(self, rows: list[dict]) -> None:
        """Speedup and parallel efficiency of each program against its smallest rank count."""
        curves = scaling_curves(rows)
        if not curves:
            return
        self.out("Speedup (rate at N ranks / rate at the fewest; weak scaling: the problem "
                 "grows with N) and parallel efficiency (speedup / (N / fewest)):")
        self.out()
        self.out("| program | " + " | ".join(f"{n} ranks" for n in curves[0][1]) + " |")
        self.out("|---|" + "---:|" * len(curves[0][1]))
        for name, points in curves:
            cells = [f"{s:.2f}× ({e:.0%})" if s is not None else "—"
                     for s, e in points.values()]
            self.out(f"| {name} | " + " | ".join(cells) + " |")
        self.out()

    def noise(self) -> None:
        if not self.rows:
            return
        self.out("## Noise")
        self.out()
        loads = [x for r in self.rows for x in r["load_average"]]
        if loads:
            self.out(f"- 1-minute load average before the launches: {min(loads):.2f} … "
                     f"{max(loads):.2f}")
        worst = sorted(self.rows, key=lambda r: -r["spread"])[:5]
        self.out("- largest spreads: " + ", ".join(
            f"{r['name']} ({r['suite']}, {r['ranks']} ranks) {r['spread']:.0%}" for r in worst))
        reps = sorted({len(r["values"]) for r in self.rows})
        self.out(f"- repetitions per row: {', '.join(map(str, reps))}")
        self.out()

    def build(self, plots_dir: Path | None) -> str:
        self.header()
        if plots_dir is not None:
            self.plots(plots_dir)
        if self.images:
            self.out("## Plots")
            self.out()
            for title, file in self.images:
                self.out(f"![{title}]({file})")
            self.out()
        self.micro()
        self.apps()
        self.noise()
        return "\n".join(self.lines) + "\n"

    # ---- plots ------------------------------------------------------------------------

    def plots(self, out: Path) -> None:
        import matplotlib  # lazily: only the plots need it (python3-matplotlib)
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        out.mkdir(parents=True, exist_ok=True)
        self.size_plots(plt, out)
        self.ranks_plots(plt, out)
        self.scaling_plots(plt, out)
        self.ratio_plots(plt, out)

    def _save(self, plt, fig, out: Path, file: str, title: str) -> None:
        fig.tight_layout()
        fig.savefig(out / file, dpi=90)
        plt.close(fig)
        self.images.append((title, f"{out.name}/{file}"))

    def size_plots(self, plt, out: Path) -> None:
        """Latency or bandwidth against message size, a plot per oneside family and rank
        count with two sizes or more, its peers in the same axes."""
        micro = [r for r in self.rows if r["kind"] == "micro" and "bytes" in r["size"]]
        families = defaultdict(list)
        for r in micro:
            if r["suite"] == "oneside":
                families[(r["family"], r["ranks"], r["transport"])].append(r)
        for (family, ranks, transport), rows in sorted(families.items()):
            if len({r["size"]["bytes"] for r in rows}) < 2:
                continue
            peers = [p for r in rows for p in peers_of(r, self.rows)]
            bandwidth = is_bandwidth(family)
            fig, ax = plt.subplots(figsize=(7, 4.2))
            series = defaultdict(list)
            for r in rows + peers:
                series[(r["suite"], _series(r["name"]))].append(r)
            # A colour per oneside series (an OSU sweep's synchronization mode), the same for
            # its peers, which are dashed.
            colours = {}
            for r in rows:
                colours.setdefault(_series(r["name"]), f"C{len(colours) % 10}")
            for (suite, name), pts in sorted(series.items()):
                pts.sort(key=lambda r: r["size"]["bytes"])
                xs = [r["size"]["bytes"] for r in pts]
                ys = [r["size"]["bytes"] / r["median"] if bandwidth else r["median"] / 1e3
                      for r in pts]
                ours = pts[0]["peer_of"] if suite != "oneside" else name
                ax.plot(xs, ys, marker="o", ms=3, ls="-" if suite == "oneside" else "--",
                        color=colours.get(_series(ours or name)), label=name)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("message size (bytes)")
            ax.set_ylabel("bandwidth (GB/s)" if bandwidth else "time per operation (µs)")
            ax.set_title(f"{family}, {ranks} ranks, {transport}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
            file = f"size-{family}-np{ranks}-{transport}.png".replace("/", "_")
            self._save(plt, fig, out, file, f"{family} at {ranks} ranks ({transport})")

    def ranks_plots(self, plt, out: Path) -> None:
        """Time per operation against ranks, a panel per micro-benchmark measured at one size
        (collectives, 8-byte latencies, synchronization) and two rank counts or more, its
        peers dashed in the same panel; one figure per transport."""
        micro = [r for r in self.rows if r["kind"] == "micro" and r["suite"] == "oneside"]
        for transport in sorted({r["transport"] for r in micro}):
            rows = [r for r in micro if r["transport"] == transport]
            sizes = defaultdict(set)
            for r in rows:
                sizes[r["family"]].add(r["size"].get("bytes"))
            names = sorted({r["name"] for r in rows if len(sizes[r["family"]]) == 1})
            names = [n for n in names if len({r["ranks"] for r in rows if r["name"] == n}) > 1]
            if not names:
                continue
            cols = min(4, len(names))
            fig, axes = plt.subplots((len(names) + cols - 1) // cols, cols, squeeze=False,
                                     figsize=(3.2 * cols, 2.6 * ((len(names) + cols - 1) // cols)))
            for ax, name in zip(axes.flat, names):
                ours = sorted((r for r in rows if r["name"] == name), key=lambda r: r["ranks"])
                lines = defaultdict(list)
                for r in ours:
                    lines[(r["suite"], r["name"])].append(r)
                    for q in peers_of(r, self.rows):
                        lines[(q["suite"], q["name"])].append(q)
                for (suite, label), pts in sorted(lines.items()):
                    ax.plot([r["ranks"] for r in pts], [r["median"] / 1e3 for r in pts],
                            marker="o", ms=3, ls="-" if suite == "oneside" else "--",
                            label=label)
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ticks = sorted({r["ranks"] for pts in lines.values() for r in pts})
                ax.set_xticks(ticks, [str(n) for n in ticks])
                ax.set_title(name, fontsize=8)
                ax.set_xlabel("ranks", fontsize=7)
                ax.set_ylabel("µs per operation", fontsize=7)
                ax.tick_params(labelsize=7)
                ax.legend(fontsize=6)
            for ax in list(axes.flat)[len(names):]:
                ax.set_visible(False)
            self._save(plt, fig, out, f"ranks-micro-{transport}.png",
                       f"micro-benchmarks against ranks ({transport})")

    def scaling_plots(self, plt, out: Path) -> None:
        groups = defaultdict(list)
        for r in self.rows:
            if r["kind"] == "app" and r["scaling"]:
                groups[(r["family"], r["transport"], r["scaling"])].append(r)
        for (family, transport, scaling), rows in sorted(groups.items()):
            curves = scaling_curves(rows)
            if not curves or len(curves[0][1]) < 2:
                continue
            fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
            ranks = list(curves[0][1])
            base = ranks[0]
            a1.plot(ranks, [n / base for n in ranks], "k:", label="ideal")
            a2.plot(ranks, [1.0] * len(ranks), "k:", label="ideal")
            for name, points in curves:
                xs = [n for n, (s, _) in points.items() if s is not None]
                a1.plot(xs, [points[n][0] for n in xs], marker="o", label=name)
                a2.plot(xs, [points[n][1] for n in xs], marker="o", label=name)
            for ax, what in ((a1, "speedup"), (a2, "parallel efficiency")):
                ax.set_xscale("log", base=2)
                ax.set_xticks(ranks, [str(n) for n in ranks])
                ax.set_xlabel("ranks")
                ax.set_ylabel(what)
                ax.grid(True, alpha=0.3)
            top = max([1.0] + [e for _, pts in curves for s, e in pts.values() if e])
            a2.set_ylim(0, 1.1 * top + 0.1)
            a1.legend(fontsize=7)
            fig.suptitle(f"{family}: {scaling} scaling, {transport} transport")
            self._save(plt, fig, out, f"scaling-{family}-{scaling}-{transport}.png",
                       f"{family} {scaling} scaling ({transport})")

    def ratio_plots(self, plt, out: Path) -> None:
        """Speed ratio of each oneside program to each peer, a bar per program and rank
        count; bars within noise drawn hatched and grey at their ratio."""
        groups = defaultdict(list)
        for r in self.rows:
            if r["kind"] == "app" and r["suite"] == "oneside":
                for p in peers_of(r, self.rows):
                    groups[(r["family"], r["transport"], r["scaling"] or "fixed")].append((r, p))
        for (family, transport, scaling), pairs in sorted(groups.items()):
            fig, ax = plt.subplots(figsize=(max(5, 0.5 * len(pairs) + 2), 4))
            labels = [f"{r['name'].split('/', 1)[-1]}\nnp{r['ranks']}" for r, _ in pairs]
            values = [speed_ratio(r, p) for r, p in pairs]
            noisy = [not differs(r, p) for r, p in pairs]
            bars = ax.bar(range(len(pairs)), values,
                          color=["0.75" if n else "C0" for n in noisy])
            for b, n in zip(bars, noisy):
                if n:
                    b.set_hatch("//")
            ax.axhline(1.0, color="k", lw=0.8)
            ax.set_xticks(range(len(pairs)), labels, fontsize=7)
            ax.set_ylabel(f"speed vs {pairs[0][1]['name'].split('/')[-1]} (×)")
            ax.set_title(f"{family} vs peer, {transport}, {scaling} (hatched: within noise)")
            self._save(plt, fig, out, f"ratio-{family}-{scaling}-{transport}.png",
                       f"{family} vs its peer ({transport}, {scaling})")


def scaling_curves(rows: list[dict]) -> list[tuple[str, dict]]:
    """(program, {ranks: (speedup, efficiency)}) for rows of one app, transport and scaling
    mode, against each program's fewest ranks; rows of lower-is-better figures are inverted.
    Empty when the rows span one rank count only."""
    ranks = sorted({r["ranks"] for r in rows})
    if len(ranks) < 2:
        return []
    by_name = defaultdict(dict)
    for r in rows:
        by_name[f"{r['name']} ({r['suite']})"][r["ranks"]] = r
    curves = []
    for name, pts in sorted(by_name.items()):
        first = min(pts)
        points = {}
        for n in ranks:
            if n not in pts:
                points[n] = (None, None)
                continue
            s = speed_ratio(pts[n], pts[first])
            points[n] = (s, s / (n / first))
        curves.append((name, points))
    return curves


def build(records: list[dict], names: list[str], out: Path, plots: bool = True) -> str:
    """Writes <out>/report.md (and <out>/plots/*.png when matplotlib is there and `plots`);
    returns the markdown. Says on stderr when plots are skipped."""
    out.mkdir(parents=True, exist_ok=True)
    plots_dir = out / "plots" if plots else None
    if plots_dir is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(f"oneside-bench: matplotlib is not installed for {sys.executable}, so the "
                  "report has no plots (Debian: apt-get install python3-matplotlib, which "
                  "scripts/setup.sh installs, serves /usr/bin/python3: run /usr/bin/python3 "
                  "oneside-bench …)", file=sys.stderr)
            plots_dir = None
    text = report(records, names).build(plots_dir)
    (out / "report.md").write_text(text)
    return text
