#!/usr/bin/env python3
"""Rewrites the settings table of README.md from the registry in runtime/settings/settings.cpp.

tests/unit/settings_test.cpp checks that the two agree; run this after adding or changing a
setting: scripts/update_readme_settings.py
"""
import pathlib
import re

top = pathlib.Path(__file__).resolve().parent.parent
src = (top / "runtime/settings/settings.cpp").read_text()
launcher_set = re.compile(r"\{\}, true\}")
rows = []
for m in re.finditer(
        r'setting_info\{"(ONESIDE_\w+)",\s*(\w+),\s*"([^"]*)",\s*((?:"[^"]*"\s*)+)(?:,\s*"([^"]*)")?([^}]*\})',
        src):
    name, typ, default, meaning, choices, tail = m.groups()
    meaning = "".join(re.findall(r'"([^"]*)"', meaning))
    kind = choices if typ == "choice" and choices else typ
    value = f"`{default}`" if default else "(unset)"
    if "true" in tail:
        meaning += " *(set by oneside-run)*"
    rows.append(f"| `{name}` | {kind.replace('|', chr(92) + '|')} | {value} | {meaning} |")

readme = top / "README.md"
text = readme.read_text()
header = "| setting | type | default | meaning |\n|---|---|---|---|\n"
start = text.index(header) + len(header)
end = text.index("\n\n", start)
readme.write_text(text[:start] + "\n".join(rows) + text[end:])
print(f"README.md: {len(rows)} settings")
