"""What the launch drivers (run_gups.py, run_io.py, run_transpose.py) share."""
from __future__ import annotations

from pathlib import Path


def load_average() -> str:
    """The 1-minute load average, printed beside each launch (figures under load mislead)."""
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"
