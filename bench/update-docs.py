#!/usr/bin/env python3
"""Replaces the text between <!-- NAME:start --> and <!-- NAME:end --> in each
FILE with the contents of SECTION. Usage: update-docs.py NAME SECTION FILE..."""
import sys

name, section = sys.argv[1], open(sys.argv[2]).read().strip()
start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
for path in sys.argv[3:]:
    text = open(path).read()
    if start not in text:
        continue
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    open(path, "w").write(f"{head}{start}\n{section}\n{end}{tail}")
    print(f"{path} updated", file=sys.stderr)
