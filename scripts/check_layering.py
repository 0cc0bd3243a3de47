#!/usr/bin/env python3
"""The layering check (STYLE.md R1, R2; DESIGN.md "Layers"): prints every include that crosses a
line it must not cross and exits 1, or prints "layering: ok".

The layers are runtime <- rma <- pgas. Each publishes its internal interface for the layers
above in <layer>/interface/<layer>/ (included as "<layer>/<name>.hpp"); public headers live in
include/oneside/<layer>/. The rules:

- a layer includes public headers of its own layer and the layers below (<oneside/...>), its
  own sources' headers, and the internal interfaces of the layers below: no other layer's
  internals, nothing of a layer above;
- an interface header includes only public headers and interfaces (never its own layer's
  internals): the interface is closed, a few headers rather than a source tree;
- a public header includes only public headers, and no third-party dependency;
- apps include only public headers, their own and the apps' common code (apps/common,
  included as "common/<name>.hpp"); benches also the bench interface (the layers' interface
  headers, bench/README.md) and the apps' shared code (the stencil's halo);
- the transport's backends (runtime/transport/shm, runtime/transport/mpi) never include each
  other, and only the transport table, the MPI backend and the bootstrap test ONESIDE_HAVE_MPI;
- each third-party dependency is used in its one folder, and only runtime/settings reads the
  environment.

Usage: scripts/check_layering.py [source-dir]
"""
import os
import re
import sys

LAYERS = ["runtime", "rma", "pgas"]
ORDER = {name: i for i, name in enumerate(LAYERS)}
SOURCE_EXT = (".hpp", ".cpp", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
THIRD_PARTY = re.compile(r"^(mpi\.h|hwloc|tbb/|oneapi/tbb|boost/)")
# Each third-party dependency lives in one folder of runtime/.
DEPENDENCY_HOME = [
    (re.compile(r"^hwloc"), "runtime/topology/", "hwloc"),
    (re.compile(r"^(tbb/|oneapi/tbb)"), "runtime/task/", "TBB"),
    (re.compile(r"^boost/"), "runtime/fiber/", "Boost"),
]
MPI_HOMES = ("runtime/transport/mpi/", "runtime/bootstrap/bootstrap_mpi.cpp")
HAVE_MPI_HOMES = ("runtime/transport/mpi/", "runtime/transport/transport_table.cpp",
                  "runtime/bootstrap/")
BACKENDS = ("shm", "mpi")


def sources(top, folder):
    base = os.path.join(top, folder)
    for root, dirs, files in os.walk(base):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(SOURCE_EXT):
                yield os.path.relpath(os.path.join(root, f), top)


def includes(top, path):
    with open(os.path.join(top, path), encoding="utf-8", errors="replace") as f:
        text = f.read()
    return text, [(m.group(1), m.group(2)) for m in INCLUDE.finditer(text)]


def exists(top, *parts):
    return os.path.isfile(os.path.join(top, *parts))


class Check:
    def __init__(self, top):
        self.top = top
        self.failures = []

    def report(self, path, message):
        self.failures.append(f"layering: {path}: {message}")

    # <oneside/...>: a public header, of this layer or one below (`level` None: any layer).
    def public(self, path, target, level):
        if not exists(self.top, "include", target):
            self.report(path, f"<{target}> is not a public header (include/{target})")
            return
        parts = target.split("/")
        if level is not None and len(parts) > 2 and parts[1] in ORDER and ORDER[parts[1]] > level:
            self.report(path, f"includes <{target}>, a layer above its own")

    # "L/name.hpp" with L a layer: an interface header of L, which must be below `level`
    # (or `level` itself). Returns True when `target` names a layer's interface at all.
    def interface(self, path, target, level):
        head = target.split("/")[0]
        if head not in ORDER:
            return False
        if not exists(self.top, head, "interface", target):
            self.report(path, f'"{target}" is not in {head}\'s internal interface '
                        f"({head}/interface/{head}/): another layer's internals")
        elif level is not None and ORDER[head] > level:
            self.report(path, f'includes "{target}", the interface of a layer above its own')
        return True

    def layer_file(self, path, layer):
        level = ORDER[layer]
        in_interface = path.startswith(f"{layer}/interface/")
        _, incs = includes(self.top, path)
        here = os.path.dirname(path)
        for kind, target in incs:
            if kind == "<":
                if target.startswith("oneside/"):
                    self.public(path, target, level)
                continue
            if ".." in target.split("/"):
                self.report(path, f'"{target}" climbs out of its folder (include by the layer\'s '
                            f"own paths or an interface)")
                continue
            if self.interface(path, target, level):
                continue
            if in_interface:
                self.report(path, f'the interface header includes "{target}", an internal '
                            f"header (interfaces include only public headers and interfaces)")
                continue
            if not (exists(self.top, here, target) or exists(self.top, layer, target)):
                self.report(path, f'"{target}" is not a header of the {layer} layer')
            # The backends of the transport never include each other.
            for b in BACKENDS:
                if path.startswith(f"runtime/transport/{b}/"):
                    for other in BACKENDS:
                        if other != b and target.startswith(f"transport/{other}/"):
                            self.report(path, f"the {b} backend includes the {other} backend")

    def public_file(self, path):
        parts = path.split("/")
        layer = parts[2] if len(parts) > 3 and parts[2] in ORDER else None
        _, incs = includes(self.top, path)
        for kind, target in incs:
            if kind == '"':
                self.report(path, f'a public header includes "{target}" (public headers include '
                            f"only <oneside/...> and the standard library)")
            elif THIRD_PARTY.match(target):
                self.report(path, f"a public header includes the third-party <{target}>")
            elif target.startswith("oneside/"):
                self.public(path, target, ORDER.get(layer) if layer else None)

    def user_file(self, path, bench):
        _, incs = includes(self.top, path)
        here = os.path.dirname(path)
        for kind, target in incs:
            if kind == "<":
                if target.startswith("oneside/"):
                    self.public(path, target, None)
                continue
            if ".." not in target.split("/") and (
                    exists(self.top, here, target)
                    or (target.startswith("common/") and exists(self.top, "apps", target))):
                continue
            if bench and (self.interface(path, target, None) or exists(self.top, "bench", "support", target)
                          or any(exists(self.top, "apps", d, target)
                                 for d in sorted(os.listdir(os.path.join(self.top, "apps"))))):
                continue
            what = "a bench" if bench else "an application"
            self.report(path, f'{what} includes "{target}" (use the public API'
                        + (" or the bench interface, bench/README.md)" if bench else ")"))

    def run(self):
        for layer in LAYERS:
            for path in sources(self.top, layer):
                self.layer_file(path, layer)
        for path in sources(self.top, "include"):
            self.public_file(path)
        for path in sources(self.top, "apps"):
            self.user_file(path, bench=False)
        for path in sources(self.top, "bench"):
            self.user_file(path, bench=True)
        self.dependencies()
        return self.failures

    def dependencies(self):
        for layer in LAYERS:
            for path in sources(self.top, layer):
                text, incs = includes(self.top, path)
                for kind, target in incs:
                    if kind != "<":
                        continue
                    for pattern, home, name in DEPENDENCY_HOME:
                        if pattern.match(target) and not path.startswith(home):
                            self.report(path, f"{name} outside {home}")
                    if target == "mpi.h" and not path.startswith(MPI_HOMES):
                        self.report(path, "MPI outside runtime/transport/mpi and the MPI bootstrap")
                if "ONESIDE_HAVE_MPI" in text and not path.startswith(HAVE_MPI_HOMES):
                    self.report(path, "tests ONESIDE_HAVE_MPI outside the transport table, the MPI "
                                "backend and the bootstrap")
                if re.search(r"\bgetenv\s*\(", text) and not path.startswith("runtime/settings/"):
                    self.report(path, "reads the environment outside runtime/settings (use the "
                                "settings registry)")
        for path in sources(self.top, "apps"):
            _, incs = includes(self.top, path)
            for kind, target in incs:
                if kind == "<" and target.startswith("hwloc"):
                    self.report(path, f"an application includes <{target}>")


def main():
    top = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    failures = Check(top).run()
    for f in failures:
        print(f)
    if not failures:
        print("layering: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
