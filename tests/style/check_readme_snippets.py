#!/usr/bin/env python3
"""Checks that the code the README and docs show is code that builds and runs, both ways:

1. Marked regions: every region "// readme:<name> begin" ... "// readme:<name> end" of a
   --marked source (a test that runs it) appears verbatim, less the region's two-space
   indent, in one of the --docs.
2. Quotes: every fenced code block of a --docs page placed right below a line
   "<!-- snippet: <path> -->" is an excerpt of that file (relative to --root): its lines, in
   order, with the same indentation relative to each other. A line "// …" or "# …" (any text
   after the ellipsis) stands for lines left out. Every file named by --quoted must be quoted
   by at least one block, so the quotes cannot all vanish unnoticed.

Usage: check_readme_snippets.py --root DIR --docs README.md docs/semantics.md
           --marked tests/rma/readme_test.cpp --quoted apps/pgas/shmem_style.cpp ...
"""
import argparse
import pathlib
import re
import sys

MARK = re.compile(r"^ *// readme:([a-z_]+) (begin|end)$")
QUOTE = re.compile(r"^<!-- snippet: (\S+) -->$")
ELISION = re.compile(r"^\s*(//|#) …")


def marked_regions(path: pathlib.Path) -> list[tuple[str, str]]:
    regions, name, lines = [], None, []
    for line in path.read_text().splitlines():
        m = MARK.match(line)
        if m and m.group(2) == "begin":
            name, lines = m.group(1), []
        elif m and m.group(2) == "end":
            regions.append((name, "".join(l + "\n" for l in lines)))
            name = None
        elif name is not None:
            lines.append(line[2:] if line.startswith("  ") else line)
    if name is not None:
        raise SystemExit(f"{path}: readme:{name} has no end marker")
    return regions


def quoted_blocks(doc: pathlib.Path) -> list[tuple[int, str, list[str]]]:
    """(line number, quoted path, block lines) for each block below a snippet comment."""
    lines = doc.read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        m = QUOTE.match(line.strip())
        if not m:
            continue
        j = i + 1
        if j >= len(lines) or not lines[j].lstrip().startswith("```"):
            raise SystemExit(f"{doc}:{i + 1}: a snippet comment must sit right above a code block")
        fence = lines[j][: len(lines[j]) - len(lines[j].lstrip())]
        body = []
        for k in range(j + 1, len(lines)):
            if lines[k].strip() == "```":
                break
            body.append(lines[k][len(fence):] if lines[k].startswith(fence) else lines[k])
        else:
            raise SystemExit(f"{doc}:{j + 1}: unclosed code block")
        out.append((i + 1, m.group(1), body))
    return out


def indent(s: str) -> int:
    return len(s) - len(s.lstrip(" "))


def find_chunk(chunk: list[str], source: list[str], start: int) -> int:
    """Index after the first run of `source` at or after `start` that equals `chunk` up to one
    common indent shift; -1 when there is none."""
    for at in range(start, len(source) - len(chunk) + 1):
        shift = None
        for q, s in zip(chunk, source[at:at + len(chunk)]):
            if not q.strip():
                if s.strip():
                    break
                continue
            d = indent(s) - indent(q)
            if q.strip() != s.strip() or d < 0 or (shift is not None and d != shift):
                break
            shift = d
        else:
            return at + len(chunk)
    return -1


def check_quote(source: list[str], body: list[str]) -> str | None:
    chunks, current = [], []
    for line in body:
        if ELISION.match(line):
            chunks.append(current)
            current = []
        else:
            current.append(line)
    chunks.append(current)
    at = 0
    for chunk in chunks:
        while chunk and not chunk[0].strip():
            chunk = chunk[1:]
        if not chunk:
            continue
        end = find_chunk(chunk, source, at)
        if end < 0:
            return "\n".join(chunk)
        at = end
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", required=True)
    p.add_argument("--docs", nargs="+", required=True)
    p.add_argument("--marked", nargs="*", default=[])
    p.add_argument("--quoted", nargs="*", default=[])
    a = p.parse_args()
    root = pathlib.Path(a.root)
    docs = {d: (root / d).read_text() for d in a.docs}
    failures = []

    found = 0
    for src in a.marked:
        for name, snippet in marked_regions(root / src):
            found += 1
            where = [d for d, text in docs.items() if snippet in text]
            if not where:
                failures.append(f"no page of {', '.join(a.docs)} contains the '{name}' snippet of "
                                f"{src} verbatim (less two spaces of indent):\n{snippet}")
            else:
                print(f"readme:{name} of {src}: in {where[0]}")
    if a.marked and found == 0:
        failures.append(f"no readme:<name> regions in {', '.join(a.marked)}")

    quoted = set()
    for d in a.docs:
        for line_no, path, body in quoted_blocks(root / d):
            file = root / path
            if not file.is_file():
                failures.append(f"{d}:{line_no}: quotes {path}, which does not exist")
                continue
            missing = check_quote(file.read_text().splitlines(), body)
            if missing is not None:
                failures.append(f"{d}:{line_no}: these lines of the block are not in {path} "
                                f"(in this order and indentation):\n{missing}")
            else:
                quoted.add(path)
                print(f"{d}:{line_no}: quotes {path} ({len(body)} lines)")
    for path in a.quoted:
        if path not in quoted:
            failures.append(f"no page of {', '.join(a.docs)} quotes {path}")

    for f in failures:
        print("check_readme_snippets: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
