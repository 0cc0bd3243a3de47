"""What every part of the bench tools shares: errors, the load average, the summary of repeated
measurements and the rule that says whether two of them differ by more than their noise."""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path


def fail(message: str) -> None:
    """Stops the program with `<program>: error: message` (the program run: run.py,
    oneside-bench, ...)."""
    print(f"{Path(sys.argv[0]).name}: error: {message}", file=sys.stderr)
    sys.exit(1)


def load_average() -> float:
    """The 1-minute load average (NaN when /proc/loadavg is unreadable); figures measured under
    load mislead, so every record and launch notes it."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def summary(values: list[float]) -> dict:
    """median, min, max and spread = (max - min) / median of repeated measurements."""
    if not values:
        raise ValueError("no values to summarize")
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return {"median": med, "min": lo, "max": hi,
            "spread": (hi - lo) / med if med > 0 else math.inf}


def differs(a: dict, b: dict, threshold: float = 0.0) -> bool:
    """Whether the measurements summarized by `a` and `b` (summary() dicts) differ by more than
    their launch-to-launch noise: their [min, max] ranges do not overlap, and the ratio of the
    medians is further from 1 than the two spreads together (each median may sit anywhere in
    its range) and than `threshold`. Rows of one value each (no spread known) differ beyond
    `threshold`."""
    if a["median"] <= 0 or b["median"] <= 0:
        return False
    change = abs(math.log(b["median"] / a["median"]))
    noise = a["spread"] + b["spread"]
    disjoint = a["max"] < b["min"] or b["max"] < a["min"]
    return disjoint and change > math.log1p(noise) and change > math.log1p(threshold)
