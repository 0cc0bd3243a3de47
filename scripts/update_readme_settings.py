#!/usr/bin/env python3
"""Rewrites the settings table of README.md from the registry in runtime/settings/settings.cpp.

tests/unit/settings_test.cpp checks that the two agree; run this after adding or changing a
setting: scripts/update_readme_settings.py
"""
import pathlib
import re

top = pathlib.Path(__file__).resolve().parent.parent
src = (top / "runtime/settings/settings.cpp").read_text()
entry = re.compile(
    r'setting_info\{"(ONESIDE_\w+)",\s*(\w+),\s*"([^"]*)",\s*'  # name, type, default
    r'\{(?:"([^"]*)",\s*"([^"]*)")?\},\s*'                      # range {"min", "max"} or {}
    r'((?:"[^"]*"\s*)+)'                                         # meaning
    r'(?:,\s*"([^"]*)")?'                                        # choices
    r'((?:,\s*(?:\{\}|true|false))*)\}')                         # set_by_launcher
rows = []
for m in entry.finditer(src):
    name, typ, default, low, high, meaning, choices, tail = m.groups()
    meaning = "".join(re.findall(r'"([^"]*)"', meaning))
    kind = choices if typ == "choice" and choices else typ
    value = f"`{default}`" if default else "(unset)"
    valid = f"{low} to {high}" + (" bytes" if typ == "size" else "") if low is not None else ""
    if "true" in tail:
        meaning += " *(set by oneside-run)*"
    rows.append(f"| `{name}` | {kind.replace('|', chr(92) + '|')} | {value} | {valid} | {meaning} |")

readme = top / "README.md"
text = readme.read_text()
header = "| setting | type | default | valid | meaning |\n|---|---|---|---|---|\n"
start = text.index(header) + len(header)
end = text.index("\n\n", start)
readme.write_text(text[:start] + "\n".join(rows) + text[end:])
print(f"README.md: {len(rows)} settings")
