#!/usr/bin/env python3
"""check_includes.py: the include graph of the C sources only looks down.

The folders form layers: src/core (plain C, no server) at the bottom, the
backends that implement its interfaces (src/backend, cuda) above it, and the
PostgreSQL layer (src/pg) on top, itself in rooms that only look down.  A file may include a header of its own
folder or of a lower layer, never of a higher one, and no chain of includes
between files may come back to where it started.  Prints each violation and
exits 1 when there is one; prints a one-line summary otherwise.

Quoted includes are resolved the way the compiler does: relative to the
including file first, then the -I folders in the Makefile's order.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYER = {"src/core": 0, "src/backend": 1, "cuda": 1,
         # the PostgreSQL layer, room by room: shared utilities, the model
         # build, tasks and batches, training, serving; the entry points
         # that coordinate them (module init, the model's SQL functions) on top
         "src/pg/base": 2, "src/pg/catalog": 3, "src/pg/task": 4, "src/pg/train": 5,
         "src/pg/serve": 6, "src/pg": 7}
SEARCH = ["src", "src/core", "src/backend", "src/pg", "cuda"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    for f in sorted(LAYER, key=len, reverse=True):
        if path == f or path.startswith(f + "/"):
            return f
    return None


def sources():
    for top in LAYER:
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".c", ".h", ".cu", ".cuh")):
                    yield os.path.relpath(os.path.join(d, name), ROOT)


def resolve(includer, target):
    for base in [os.path.dirname(includer)] + SEARCH:
        cand = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(os.path.join(ROOT, cand)):
            return cand
    return None


def main():
    graph, problems = {}, []
    for src in sorted(sources()):
        with open(os.path.join(ROOT, src), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        graph[src] = []
        for target in INCLUDE.findall(text):
            dst = resolve(src, target)
            if dst is None:
                continue  # a system or generated header
            graph[src].append(dst)
            a, b = folder_of(src), folder_of(dst)
            if b is None:
                problems.append(f"{src}: includes {dst}, outside the layered folders")
            elif a != b and LAYER[b] >= LAYER[a]:
                problems.append(f"{src} ({a}) includes {dst} ({b}): a folder may only include its own or a lower layer")
    # file-level cycles (depth-first search with colours)
    colour, stack = {}, []

    def visit(node):
        colour[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if colour.get(nxt) == 1:
                cyc = stack[stack.index(nxt):] + [nxt]
                problems.append("include cycle: " + " -> ".join(cyc))
            elif colour.get(nxt) is None:
                visit(nxt)
        stack.pop()
        colour[node] = 2

    for node in sorted(graph):
        if colour.get(node) is None:
            visit(node)
    for p in problems:
        print(p)
    edges = sum(len(v) for v in graph.values())
    print(f"include graph: {len(graph)} files, {edges} includes, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
