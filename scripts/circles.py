#!/usr/bin/env python3
"""Import circles between the module's Rust files (src/), and between its
folders.  Reads every `crate::a::b` path (in `use` lines and in code),
maps it to the file that defines the module it names, and prints the
strongly connected components of more than one file (or folder).  Exits
1 if there is any.  Usage: scripts/circles.py [SRC]"""

import os
import re
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
SRC = os.path.abspath(SRC)
PATH = re.compile(r"\bcrate::((?:[a-z_][a-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*|\{[^}]*\})")


def module_file(parts):
    """The file of the longest module prefix of parts, or None."""
    for n in range(len(parts), 0, -1):
        base = os.path.join(SRC, *parts[:n])
        for f in (base + ".rs", os.path.join(base, "mod.rs")):
            if os.path.isfile(f):
                return os.path.relpath(f, SRC)
    return None


def rust_files():
    for root, _dirs, files in os.walk(SRC):
        for f in files:
            if f.endswith(".rs") and f != "uapi_generated.rs":
                yield os.path.relpath(os.path.join(root, f), SRC)


def edges():
    graph = {}
    for name in rust_files():
        deps = set()
        with open(os.path.join(SRC, name)) as f:
            for line in f:
                code = line.split("//")[0]
                for m in PATH.finditer(code):
                    text = m.group(1)
                    if text.startswith("{"):
                        paths = [p.strip().split("::") for p in text[1:-1].split(",") if p.strip()]
                    else:
                        paths = [text.split("::")]
                    for parts in paths:
                        target = module_file([p for p in parts if p not in ("self",)])
                        if target and target != name:
                            deps.add(target)
        graph[name] = deps
    return graph


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def folder(name):
    # A folder's mod.rs declares its children: that is not a use.
    return os.path.dirname(name) or "."


def main():
    graph = edges()
    files = sccs(graph)
    fgraph = {}
    for v, ws in graph.items():
        if os.path.dirname(v) == "" and v != "uapi.rs":
            continue  # the crate root uses everything
        for w in ws:
            if folder(v) != folder(w) and folder(w) != ".":
                fgraph.setdefault(folder(v), set()).add(folder(w))
    folders = sccs(fgraph)
    print(f"{len(graph)} files, {sum(len(w) for w in graph.values())} file edges")
    for c in files:
        print("file circle: " + " <-> ".join(c))
    for c in folders:
        print("folder circle: " + " <-> ".join(c))
    order = {}
    for v, ws in sorted(fgraph.items()):
        print(f"  {v} -> {', '.join(sorted(ws))}")
    if not files and not folders:
        print("no circles")
    return 1 if files or folders else 0


if __name__ == "__main__":
    sys.exit(main())
