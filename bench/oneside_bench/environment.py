"""What a record says about where it was measured: the machine (hwloc's topology summary, or
/proc and /sys when lstopo is missing), the versions (oneside's commit, the compiler and oneTBB
of the build, Open MPI, Python) and oneside's settings (ONESIDE_* in the environment)."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path


def _run(cmd: list[str], timeout: float = 20) -> str | None:
    """The stdout of a quick command, or None when it is missing or fails."""
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def cores() -> int:
    """The cores this process may run on (the launcher's binding sees the same set)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def _memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _topology() -> str:
    """hwloc's summary (`lstopo-no-graphics --of console`, its lines without the logical and
    physical indexes, identical lines counted: "2 × L2 (512KB) + … + Core + PU"), else
    packages, NUMA nodes and CPUs from /proc and /sys."""
    text = _run(["lstopo-no-graphics", "--of", "console", "--no-io"])
    if text:
        counts: dict[str, int] = {}
        for line in text.splitlines():
            shape = re.sub(r" ?[LP]#\d+", "", line.strip()).replace("()", "").strip()
            shape = re.sub(r"\(\s+", "(", shape)
            if shape:
                counts[shape] = counts.get(shape, 0) + 1
        return "; ".join(f"{n} × {s}" if n > 1 else s for s, n in counts.items())
    nodes = len(list(Path("/sys/devices/system/node").glob("node[0-9]*")))
    packages = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("physical id"):
                packages.add(line.split(":", 1)[1].strip())
    except OSError:
        pass
    return (f"{len(packages) or 1} package(s), {nodes or 1} NUMA node(s), "
            f"{os.cpu_count()} logical CPU(s) (from /proc: lstopo-no-graphics not installed)")


def machine() -> dict:
    return {"hostname": platform.node(), "cpu": _cpu_model(), "cores": cores(),
            "logical_cpus": os.cpu_count() or 1, "memory_bytes": _memory_bytes(),
            "topology": _topology(), "kernel": platform.release()}


def cmake_cache(build: Path) -> dict[str, str]:
    """NAME -> value of a build's CMakeCache.txt ({} when there is none)."""
    values = {}
    try:
        for line in (build / "CMakeCache.txt").read_text().splitlines():
            m = re.match(r"^([A-Za-z_0-9]+):[A-Z]+=(.*)$", line)
            if m:
                values[m.group(1)] = m.group(2)
    except OSError:
        pass
    return values


def _compiler(build: Path, cache: dict[str, str]) -> str:
    for path in sorted(build.glob("CMakeFiles/*/CMakeCXXCompiler.cmake")):
        text = path.read_text()
        ident = re.search(r'set\(CMAKE_CXX_COMPILER_ID "([^"]*)"\)', text)
        version = re.search(r'set\(CMAKE_CXX_COMPILER_VERSION "([^"]*)"\)', text)
        if ident and version:
            return f"{ident.group(1)} {version.group(1)} ({cache.get('CMAKE_CXX_COMPILER', '?')})"
    return cache.get("CMAKE_CXX_COMPILER", "unknown")


def _tbb(cache: dict[str, str]) -> str:
    """oneTBB's version from its header (next to the TBB_DIR the build found, else the system
    one)."""
    candidates = [Path("/usr/include/oneapi/tbb/version.h"), Path("/usr/include/tbb/version.h")]
    if "TBB_DIR" in cache:  # <prefix>/lib/<arch>/cmake/TBB -> <prefix>/include
        for up in Path(cache["TBB_DIR"]).parents:
            candidates.insert(0, up / "include" / "oneapi" / "tbb" / "version.h")
    for header in candidates:
        try:
            text = header.read_text()
        except OSError:
            continue
        major = re.search(r"#define TBB_VERSION_MAJOR (\d+)", text)
        minor = re.search(r"#define TBB_VERSION_MINOR (\d+)", text)
        if major and minor:
            return f"{major.group(1)}.{minor.group(1)}"
    return "unknown"


def _commit(source: Path | None) -> str:
    if source is None:
        return "unknown"
    head = _run(["git", "-C", str(source), "rev-parse", "--short=12", "HEAD"])
    if not head:
        return "unknown"
    changes = _run(["git", "-C", str(source), "--no-optional-locks", "status", "--porcelain",
                    "--untracked-files=no"])
    return head.strip() + ("-dirty" if changes else "")


def versions(build: Path, mpirun: str = "mpirun") -> dict:
    cache = cmake_cache(build)
    source = cache.get("oneside_SOURCE_DIR") or cache.get("CMAKE_HOME_DIRECTORY")
    mpi = _run([mpirun, "--version"])
    return {"oneside": _commit(Path(source) if source else None),
            "build_type": cache.get("CMAKE_BUILD_TYPE", "unknown"),
            "compiler": _compiler(build, cache), "tbb": _tbb(cache),
            "mpi": mpi.splitlines()[0].strip() if mpi else "not found",
            "python": platform.python_version()}


def settings(extra: list[str] | None = None) -> dict[str, str]:
    """oneside's settings for this run: ONESIDE_* of the environment, then the NAME=VALUE
    pairs given for oneside's ranks (--oneside-env), which win."""
    out = {k: v for k, v in os.environ.items() if k.startswith("ONESIDE_")}
    for kv in extra or []:
        name, _, value = kv.partition("=")
        out[name] = value
    return dict(sorted(out.items()))
