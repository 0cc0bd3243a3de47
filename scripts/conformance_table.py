#!/usr/bin/env python3
"""The conformance table of docs/conformance.md: every SYN-*, MEM-*, ERR-* and IO-* rule of the
checklist (../shared/spec/checklist.md, or the copy named by --checklist) with the tests that
cite it through covers("ID", ...), or the reason no test can.

  scripts/conformance_table.py            rewrite the table in docs/conformance.md
  scripts/conformance_table.py --check    exit 1 when the table is not current (a ctest entry)

A rule that no test cites and that has no reason in UNTESTABLE below fails --check: write a
test, or say here why there cannot be one.
"""
import argparse
import pathlib
import re
import sys

TOP = pathlib.Path(__file__).resolve().parent.parent
FAMILIES = ("SYN", "MEM", "ERR", "IO")
BEGIN = "<!-- conformance table: scripts/conformance_table.py writes it -->"
END = "<!-- end of conformance table -->"

# Rules no test can check, and why.
UNTESTABLE = {
    "MEM-2": "separate-model rules: oneside windows are unified (MEM-5 is tested)",
    "MEM-4": "says what programs must not rely on (partial transfers seen while in flight); "
             "there is no behaviour to assert (MEM-16 tests the flag polling it allows)",
    "MEM-15": "separate-model rules: oneside windows are unified (MEM-5 is tested)",
    "MEM-17": "about compilers transforming user code; the sync calls are compiler barriers "
              "(covered through MEM-16 and SYN-28)",
    "MEM-18": "advice to users; the pgas layer (issue 6) follows it",
    "ERR-1": "errors go to the window's handler (ERR-2 is tested)",
    "ERR-14": "needs ranks that cannot share memory; on the shm transport every rank can. The "
              "check exists (window::allocate_shared, WIN-8); the MPI transport (issue 5) makes "
              "the case reachable",
    "IO-9": "a split pair on one member against a blocking collective on another: the "
             "non-ordered collectives exchange nothing, so nothing can notice (docs/semantics.md)",
    "IO-16": "counts and offsets are 64-bit throughout; writing 2^31 + 16 bytes needs the "
             "large-disk CI, which does not exist yet",
    "ERR-10": "oneside never raises rma_conflict: overlapping accesses are undefined, not "
              "errors (SEM-1)",
}


def checklist_rules(path: pathlib.Path) -> list[tuple[str, str]]:
    rules = []
    for m in re.finditer(r"^### ((?:%s)-\d+) (.*)$" % "|".join(FAMILIES), path.read_text(), re.M):
        rules.append((m.group(1), m.group(2).strip()))
    return rules


def citations() -> dict[str, list[str]]:
    """ID -> ["file:Suite.Test", ...] from every covers(...) call under tests/."""
    test_macro = re.compile(r"^(?:TEST|TEST_F|TEST_P)\((\w+),\s*(\w+)\)", re.M)
    covers_call = re.compile(r"covers\(([^;]*?)\);", re.S)
    out: dict[str, list[str]] = {}
    for f in sorted((TOP / "tests").rglob("*.cpp")):
        text = f.read_text()
        tests = [(m.start(), f"{m.group(1)}.{m.group(2)}") for m in test_macro.finditer(text)]
        for m in covers_call.finditer(text):
            owner = [name for at, name in tests if at < m.start()]
            if not owner:
                continue
            where = f"{f.relative_to(TOP / 'tests')}: {owner[-1]}"
            for rule in re.findall(r'"([A-Z]+-[\w/]+)"', m.group(1)):
                cited = out.setdefault(rule, [])
                if where not in cited:
                    cited.append(where)
    return out


def table(rules: list[tuple[str, str]], cited: dict[str, list[str]]) -> tuple[str, list[str]]:
    rows = ["| rule | title | tests | status |", "|---|---|---|---|"]
    missing = []
    for rule, title in rules:
        tests = cited.get(rule, [])
        if tests:
            shown = "; ".join(f"`{t}`" for t in tests[:3])
            if len(tests) > 3:
                shown += f" (+{len(tests) - 3} more)"
            status = "tested"
        elif rule in UNTESTABLE:
            shown, status = "—", "not testable: " + UNTESTABLE[rule]
        else:
            shown, status = "—", "**no test**"
            missing.append(rule)
        title = title.replace("|", "\\|")
        rows.append(f"| {rule} | {title} | {shown} | {status} |")
    return "\n".join(rows), missing


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only check that the table is current")
    p.add_argument("--checklist", default=str(TOP.parent / "shared/spec/checklist.md"))
    p.add_argument("--doc", default=str(TOP / "docs/conformance.md"),
                   help="the page that holds the table (default: docs/conformance.md)")
    a = p.parse_args()
    doc = pathlib.Path(a.doc)
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        print(f"conformance_table: {doc} lacks the markers {BEGIN!r} … {END!r}",
              file=sys.stderr)
        return 1
    start = text.index(BEGIN) + len(BEGIN)
    stop = text.index(END)
    current = text[start:stop].strip()
    checklist = pathlib.Path(a.checklist)
    if checklist.exists():
        rules = checklist_rules(checklist)
    elif a.check:
        # A checkout without the spec beside it: the rules are the table's own rows, and the
        # check still proves their tests and reasons current.
        rules = [(m.group(1), m.group(2).replace("\\|", "|"))
                 for m in re.finditer(r"^\| ((?:%s)-\d+) \| (.*?) \| " % "|".join(FAMILIES),
                                      current, re.M)]
        print(f"conformance_table: {checklist} not found; checking the table's {len(rules)} "
              "rules", file=sys.stderr)
    else:
        print(f"conformance_table: {checklist} not found (pass --checklist)", file=sys.stderr)
        return 2
    body, missing = table(rules, citations())
    if missing:
        print("conformance_table: no test cites " + ", ".join(missing) +
              " and UNTESTABLE gives no reason", file=sys.stderr)
    if a.check:
        if current != body:
            print(f"conformance_table: the table in {doc} is out of date; run "
                  "scripts/conformance_table.py", file=sys.stderr)
            return 1
        return 1 if missing else 0
    doc.write_text(text[:start] + "\n" + body + "\n" + text[stop:])
    print(f"{doc.relative_to(TOP) if doc.is_relative_to(TOP) else doc}: conformance table of "
          f"{body.count(chr(10)) - 1} rules")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
