#!/usr/bin/env python3
"""Fails on an #include that runs up the layer order, naming file and line.

Usage: check_layers.py ROOT LAYER...   (bottom up; "a,b" = peers, e.g. transport,topology)

A file belongs to the layer of its top folder. A non-test file may include its own layer and
any lower one, never a higher one nor a peer. Tests (any file under a tests/ folder, and the
top-level tests/) may include any layer: they check a layer through the ones above it.
fuzz/ (the libFuzzer targets) is treated like tests by standing at the top of the order, a
peer of examples and tests (cmake/layers.cmake): it may include every layer below, not them.
"""
import os
import re
import sys

SOURCES = (".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1]
    rank = {}
    for i, group in enumerate(argv[2:]):
        for layer in group.split(","):
            rank[layer] = i
    bad = checked = 0
    for layer in rank:
        top = os.path.join(root, layer)
        for folder, dirs, files in os.walk(top):
            rel = os.path.relpath(folder, root).split(os.sep)
            if "tests" in rel:
                dirs[:] = []
                continue
            dirs.sort()
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(folder, name)
                checked += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1).split("/")[0]
                        if target not in rank or target == layer or rank[target] < rank[layer]:
                            continue
                        how = "a peer" if rank[target] == rank[layer] else "a higher layer"
                        print(f"{os.path.relpath(path, root)}:{number}: {layer} includes "
                              f'"{m.group(1)}" from {how} ({target})')
                        bad += 1
    order = " < ".join(argv[2:])
    if bad:
        print(f"{bad} include(s) run against the layer order {order}")
        return 1
    print(f"{checked} files follow the layer order {order}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
