"""compare OLD NEW: each row of two records (matched by schema.row_key) with the ratio of their
medians and the launch-to-launch spread of both; a row is flagged only when the change lies
outside both runs' noise (util.differs)."""

from __future__ import annotations

from .schema import row_key
from .util import differs


def compare(old: dict, new: dict, threshold: float = 0.05) -> dict:
    """{"rows": [{key, old, new, ratio, verdict}], "only_old": [...], "only_new": [...]}: ratio
    is new / old of the medians; verdict "slower", "faster" (outside the noise and
    `threshold`) or "" (within it)."""
    a = {row_key(r): r for r in old["rows"]}
    b = {row_key(r): r for r in new["rows"]}
    rows = []
    for key in sorted(a.keys() & b.keys()):
        x, y = a[key], b[key]
        ratio = y["median"] / x["median"] if x["median"] > 0 else float("inf")
        verdict = ""
        if differs(x, y, threshold):
            worse = ratio > 1 if x["better"] == "lower" else ratio < 1
            verdict = "slower" if worse else "faster"
        rows.append({"key": key, "old": x, "new": y, "ratio": ratio, "verdict": verdict})
    return {"rows": rows, "only_old": sorted(a.keys() - b.keys()),
            "only_new": sorted(b.keys() - a.keys())}


def _figure(r: dict) -> str:
    return f"{r['median']:.4g} {r['unit']}"


def context(record: dict) -> str:
    """Where and what a record measured, in one line."""
    m, v = record["machine"], record["versions"]
    load = record.get("load_average_start")
    return (f"oneside {v['oneside']} ({v['build_type']}, {v['compiler']}), {m['hostname']} "
            f"({m['cores']} cores), {record['created']}, load at start "
            f"{'?' if load is None else f'{load:.2f}'}")


def markdown(result: dict, old_name: str, new_name: str, threshold: float,
             all_rows: bool = False, old: dict | None = None, new: dict | None = None) -> str:
    flagged = [r for r in result["rows"] if r["verdict"]]
    lines = [f"# oneside-bench compare: {old_name} → {new_name}", ""]
    if old is not None and new is not None:
        lines += [f"- old: {context(old)}", f"- new: {context(new)}", ""]
    lines += [f"{len(result['rows'])} rows in both; {len(flagged)} changed beyond the "
              f"launch-to-launch spread of both runs (and beyond {threshold:.0%}). Ratio: new / "
              "old of the medians; spread: (max − min) / median over each run's repetitions.",
              ""]
    shown = result["rows"] if all_rows else flagged
    if shown:
        lines += ["| row | old | new | new / old | spread old / new | verdict |",
                  "|---|---:|---:|---:|---:|---|"]
        for r in shown:
            lines.append(f"| {r['key']} | {_figure(r['old'])} | {_figure(r['new'])} | "
                         f"{r['ratio']:.3f}× | {r['old']['spread']:.0%} / "
                         f"{r['new']['spread']:.0%} | "
                         f"{('**' + r['verdict'] + '**') if r['verdict'] else 'within noise'} |")
        lines.append("")
    for label, keys in (("only in the old run", result["only_old"]),
                        ("only in the new run", result["only_new"])):
        if keys:
            lines.append(f"{len(keys)} row(s) {label}: " + "; ".join(keys[:20])
                         + (" …" if len(keys) > 20 else ""))
    return "\n".join(lines) + "\n"
