#!/usr/bin/env python3
"""For a partial bench/run.sh: prints the run section of DOC with the rows of the
sections in TABLE replaced by TABLE's (in place; new sections at the end), the
other rows and the header lines kept, and NOTE added to the header.
Usage: merge-rows.py DOC TABLE NOTE"""
import sys

doc, table, note = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
text = open(doc).read()
old = text.split("<!-- run:start -->", 1)[1].split("<!-- run:end -->", 1)[0].strip()
lines = old.splitlines()
header = [l for l in lines if not l.startswith("|")]
old_rows = [l for l in lines if l.startswith("|")][2:]
new_lines = [l for l in table.splitlines() if l.startswith("|")]
head, new_rows = new_lines[:2], new_lines[2:]


def section(row):
    return row.split("|")[1].strip()


fresh = {}
for row in new_rows:
    fresh.setdefault(section(row), []).append(row)
out, done = [], set()
for row in old_rows:
    name = section(row)
    if name not in fresh:
        out.append(row)
    elif name not in done:
        out.extend(fresh[name])
        done.add(name)
for name, rows in fresh.items():
    if name not in done:
        out.extend(rows)
header = [l for l in header if l.strip()] + [note]
print()
print("\n".join(header))
print()
print("\n".join(head + out))
