"""Study definitions (bench/studies/*.toml, or the same keys in JSON): what scale runs.

    name = "node"                      # the record's "study"
    description = "…"
    transport = "shm"                  # or "mpi": every rank a node of its own, over MPI
    launcher = "mpirun --bind-to none" # optional: the MPI launcher (its own placement flags)
    ranks = [1, 2, 4, 8]
    repetitions = 3
    timeout = 600                      # seconds per launch
    oneside_env = ["ONESIDE_NAME=VALUE"]

    [micro]                            # optional: Google Benchmark families (run.py's)
    ranks = [2, 4, 8]                  # default: the study's
    families = ["barrier", "latency"]  # default: all
    min_time = 0.05
    filter = "…"                       # optional, instead of families
    # or several sets, each at its own rank counts: [[micro]] tables (e.g. the OSU sweeps
    # at 2 ranks only, the collectives at every count)

    [apps.stencil]                     # one table per app (apps.APPS)
    variants = ["fence", "pscw"]       # default: every variant the binary offers
    scaling = ["strong", "weak"]
    size = {n = 2000, iterations = 20} # merged over the app's default size
    ranks = [1, 2, 4]                  # default: the study's
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from .apps import APPS
from .gbench import GROUPS

TOP_KEYS = {"name", "description", "transport", "launcher", "ranks", "repetitions", "timeout",
            "oneside_env", "micro", "apps"}
MICRO_KEYS = {"ranks", "families", "min_time", "filter"}
APP_KEYS = {"variants", "scaling", "size", "ranks"}


class study_error(ValueError):
    pass


def _ranks(where: str, value: object) -> list[int]:
    if (not isinstance(value, list) or not value
            or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in value)):
        raise study_error(f"{where}: ranks must be a list of positive integers, not {value!r}")
    return value


def _micro(where: str, m: object, ranks: list[int]) -> dict:
    """One [micro] table, checked, with its defaults."""
    if not isinstance(m, dict):
        raise study_error(f"{where}: expected a table, not {m!r}")
    unknown = set(m) - MICRO_KEYS
    if unknown:
        raise study_error(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    families = m.get("families")
    if families is not None and not set(families) <= set(GROUPS):
        raise study_error(f"{where}: unknown families "
                          f"{', '.join(sorted(set(families) - set(GROUPS)))}")
    return {"ranks": _ranks(where, m.get("ranks", ranks)), "families": families,
            "min_time": float(m.get("min_time", 0.1)), "filter": m.get("filter")}


def load(path: Path) -> dict:
    """The study at `path` (TOML, or JSON when the name ends in .json), checked and with its
    defaults filled in; study_error says what is wrong."""
    try:
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (OSError, ValueError) as e:
        raise study_error(f"{path}: {e}") from e
    where = str(path)
    unknown = set(data) - TOP_KEYS
    if unknown:
        raise study_error(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    s = {"name": data.get("name", path.stem), "description": data.get("description", ""),
         "transport": data.get("transport", "shm"), "launcher": data.get("launcher", ""),
         "ranks": _ranks(where, data.get("ranks", [1, 2, 4])),
         "repetitions": data.get("repetitions", 3), "timeout": data.get("timeout", 600),
         "oneside_env": data.get("oneside_env", []), "micro": None, "apps": {}}
    if s["transport"] not in ("shm", "mpi"):
        raise study_error(f"{where}: transport {s['transport']!r} is neither shm nor mpi")
    if not all(isinstance(kv, str) and kv.startswith("ONESIDE_") and "=" in kv
               for kv in s["oneside_env"]):
        raise study_error(f"{where}: oneside_env must list ONESIDE_NAME=VALUE strings")
    if not isinstance(s["repetitions"], int) or s["repetitions"] < 1:
        raise study_error(f"{where}: repetitions must be a positive integer")
    if "micro" in data:
        tables = data["micro"] if isinstance(data["micro"], list) else [data["micro"]]
        s["micro"] = [_micro(f"{where} [micro]", m, s["ranks"]) for m in tables]
    for name, spec in data.get("apps", {}).items():
        if name not in APPS:
            raise study_error(f"{where}: unknown app {name!r} (known: {', '.join(APPS)})")
        unknown = set(spec) - APP_KEYS
        if unknown:
            raise study_error(f"{where} [apps.{name}]: unknown keys "
                              f"{', '.join(sorted(unknown))}")
        scaling = spec.get("scaling", ["strong"])
        if not scaling or not set(scaling) <= {"strong", "weak"}:
            raise study_error(f"{where} [apps.{name}]: scaling must list strong and/or weak")
        size = {**APPS[name].base, **spec.get("size", {})}
        if set(size) != set(APPS[name].base):
            raise study_error(f"{where} [apps.{name}]: size keys are "
                              f"{', '.join(APPS[name].base)}")
        s["apps"][name] = {"variants": spec.get("variants"), "scaling": scaling, "size": size,
                           "ranks": _ranks(f"{where} [apps.{name}]",
                                           spec.get("ranks", s["ranks"]))}
    if s["micro"] is None and not s["apps"]:
        raise study_error(f"{where}: nothing to run (no [micro] and no [apps.*])")
    return s
