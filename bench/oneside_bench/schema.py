"""The one JSON schema of every oneside-bench result (micro, apps and scale alike), as a
validator in the standard library. A record:

    {"schema": "oneside-bench/1", "command": "micro" | "apps" | "scale",
     "study": name or null, "created": ISO 8601 time (UTC),
     "machine": {"hostname", "cpu", "cores", "logical_cpus", "memory_bytes", "topology",
                 "kernel"},
     "versions": {"oneside" (commit), "build_type", "compiler", "tbb", "mpi", "python"},
     "settings": {ONESIDE_NAME: value}  (oneside's environment and --oneside-env),
     "load_average_start": 1-minute load average before the first launch (null: unknown),
     "options": {what the command was asked: repetitions, min_time, launcher, ...},
     "rows": [row, ...]}

A row is one figure measured `repetitions` times, launch after launch:

    {"kind": "micro" | "app", "name": benchmark or app/variant ("put_bandwidth/1024",
     "stencil/fence"), "suite": "oneside" | "mpi" | "oshmem" | "serial",
     "peer_of": the name of the oneside row this row is the baseline of, or null,
     "family": micro family or app name, "ranks": N, "transport": "shm" | "mpi",
     "binding": "core" | "none" | "launcher", "launcher": the launch command's head,
     "scaling": null | "strong" | "weak", "size": {problem size: number or string},
     "metric": what is measured ("time", "rate", "teps", ...), "unit": "ns", "MB/s", ...,
     "better": "lower" | "higher", "values": [one per repetition],
     "median", "min", "max", "spread" ((max - min) / median), "load_average": [per launch]}

validate(record) returns the list of what is wrong (empty: valid)."""

from __future__ import annotations

import math

SCHEMA = "oneside-bench/1"
COMMANDS = ("micro", "apps", "scale")
SUITES = ("oneside", "mpi", "oshmem", "serial")
KINDS = ("micro", "app")
NUMBER = (int, float)

# field -> (types, required); None in types: null allowed.
TOP = {"schema": ((str,), True), "command": ((str,), True), "study": ((str, type(None)), True),
       "created": ((str,), True), "machine": ((dict,), True), "versions": ((dict,), True),
       "settings": ((dict,), True), "load_average_start": ((*NUMBER, type(None)), True),
       "options": ((dict,), True), "rows": ((list,), True)}
MACHINE = {"hostname": (str,), "cpu": (str,), "cores": (int,), "logical_cpus": (int,),
           "memory_bytes": (int, type(None)), "topology": (str,), "kernel": (str,)}
VERSIONS = {"oneside": (str,), "build_type": (str,), "compiler": (str,), "tbb": (str,),
            "mpi": (str,), "python": (str,)}
ROW = {"kind": (str,), "name": (str,), "suite": (str,), "peer_of": (str, type(None)),
       "family": (str,), "ranks": (int,), "transport": (str,), "binding": (str,),
       "launcher": (str,), "scaling": (str, type(None)), "size": (dict,), "metric": (str,),
       "unit": (str,), "better": (str,), "values": (list,), "median": NUMBER, "min": NUMBER,
       "max": NUMBER, "spread": NUMBER, "load_average": (list,)}


def _fields(where: str, obj: dict, spec: dict, errors: list[str]) -> None:
    for name, types in spec.items():
        if name not in obj:
            errors.append(f"{where}: missing '{name}'")
        elif isinstance(obj[name], bool) or not isinstance(obj[name], types):
            errors.append(f"{where}: '{name}' is {type(obj[name]).__name__}, expected "
                          + " or ".join("null" if t is type(None) else t.__name__
                                        for t in types))
    for name in obj:
        if name not in spec:
            errors.append(f"{where}: unknown field '{name}'")


def _row(i: int, row: object, errors: list[str]) -> None:
    where = f"rows[{i}]"
    if not isinstance(row, dict):
        errors.append(f"{where}: not an object")
        return
    _fields(where, row, ROW, errors)
    if row.get("kind") not in KINDS:
        errors.append(f"{where}: kind {row.get('kind')!r} is not one of {', '.join(KINDS)}")
    if row.get("suite") not in SUITES:
        errors.append(f"{where}: suite {row.get('suite')!r} is not one of {', '.join(SUITES)}")
    if row.get("better") not in ("lower", "higher"):
        errors.append(f"{where}: better {row.get('better')!r} is neither lower nor higher")
    if row.get("scaling") not in (None, "strong", "weak"):
        errors.append(f"{where}: scaling {row.get('scaling')!r} is not strong, weak or null")
    if isinstance(row.get("ranks"), int) and row["ranks"] < 1:
        errors.append(f"{where}: ranks {row['ranks']} < 1")
    values = row.get("values")
    if not isinstance(values, list):
        return
    if not values:
        errors.append(f"{where}: no values")
        return
    if not all(isinstance(v, NUMBER) and not isinstance(v, bool) and math.isfinite(v)
               for v in values):
        errors.append(f"{where}: values must be finite numbers")
        return
    ordered = sorted(values)
    n = len(ordered)
    median = (ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2)
    for name, want in (("median", median), ("min", ordered[0]), ("max", ordered[-1])):
        got = row.get(name)
        if isinstance(got, NUMBER) and not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12):
            errors.append(f"{where}: {name} {got} is not the {name} of the values ({want})")
    for size_name, size_value in (row.get("size") or {}).items():
        if not isinstance(size_value, (int, float, str)) or isinstance(size_value, bool):
            errors.append(f"{where}: size '{size_name}' is neither a number nor a string")


def validate(record: object) -> list[str]:
    """What is wrong with `record` against the schema (an empty list: nothing)."""
    if not isinstance(record, dict):
        return ["the record is not a JSON object"]
    errors: list[str] = []
    _fields("record", record, {k: v[0] for k, v in TOP.items()}, errors)
    if record.get("schema") != SCHEMA:
        errors.append(f"record: schema {record.get('schema')!r} is not {SCHEMA!r}")
    if record.get("command") not in COMMANDS:
        errors.append(f"record: command {record.get('command')!r} is not one of "
                      + ", ".join(COMMANDS))
    if isinstance(record.get("machine"), dict):
        _fields("machine", record["machine"], MACHINE, errors)
    if isinstance(record.get("versions"), dict):
        _fields("versions", record["versions"], VERSIONS, errors)
    if isinstance(record.get("settings"), dict):
        for k, v in record["settings"].items():
            if not k.startswith("ONESIDE_") or not isinstance(v, str):
                errors.append(f"settings: '{k}' is not an ONESIDE_* setting with a string value")
    if isinstance(record.get("rows"), list):
        seen = set()
        for i, row in enumerate(record["rows"]):
            _row(i, row, errors)
            if isinstance(row, dict):
                key = row_key(row)
                if key in seen:
                    errors.append(f"rows[{i}]: a second row {key}")
                seen.add(key)
    return errors


def row_key(row: dict) -> str:
    """What identifies a row across runs (compare matches rows of two records by it)."""
    size = ",".join(f"{k}={v}" for k, v in sorted((row.get("size") or {}).items()))
    scaling = f" {row['scaling']}" if row.get("scaling") else ""
    return (f"{row.get('name')} [{row.get('suite')}] np{row.get('ranks')} "
            f"{row.get('transport')}{scaling}" + (f" ({size})" if size else ""))
