#!/usr/bin/env python3
"""Import circles between the module's Rust files (src/), and between its
folders.  Reads every `crate::` path (in `use` trees, however nested and
over however many lines, and in code), maps it to the file that defines
the module it names; and every call of C glue (`rprof_*`, declared in
kapi/helpers.rs) to the `.c` file that defines it, so that a folder that
reaches another folder's C counts as using it.  Prints the strongly
connected components of more than one file (or folder).  Exits 1 if there
is any.  Usage: scripts/circles.py [SRC]"""

import os
import re
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
SRC = os.path.abspath(SRC)
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
C_DEF = re.compile(r"^[a-z][^;(]*\b(rprof_[a-z0-9_]+)\(", re.M)
C_CALL = re.compile(r"\b(rprof_[a-z0-9_]+)\s*\(")


def use_paths(text, i):
    """The paths of the use tree at text[i:] (after `crate::`), and where
    it ends: `a::b`, `a::{b, c::{d, e}}`, `{a, b}`."""
    paths, prefix = [], []
    while True:
        while text[i].isspace():
            i += 1
        if text[i] == "{":
            i += 1
            while True:
                while text[i].isspace() or text[i] == ",":
                    i += 1
                if text[i] == "}":
                    return [prefix + p for p in paths], i + 1
                sub, i = use_paths(text, i)
                paths += sub
        m = IDENT.match(text, i)
        if not m:
            return [prefix] if prefix else [], i
        prefix = prefix + [m.group(0)]
        i = m.end()
        if text.startswith("::", i):
            i += 2
            continue
        # `as name` renames; the path is what it names.
        return [prefix], i


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


def c_definitions():
    """{function: .c file} for the C glue under SRC."""
    defs = {}
    for root, _dirs, files in os.walk(SRC):
        for f in files:
            if f.endswith(".c"):
                path = os.path.join(root, f)
                with open(path) as fh:
                    for m in C_DEF.finditer(fh.read()):
                        defs.setdefault(m.group(1), os.path.relpath(path, SRC))
    return defs


def edges():
    graph = {}
    cdefs = c_definitions()
    for name in rust_files():
        deps = set()
        with open(os.path.join(SRC, name)) as f:
            code = "\n".join(line.split("//")[0] for line in f)
        for m in re.finditer(r"\bcrate::", code):
            paths, _ = use_paths(code, m.end())
            for parts in paths:
                target = module_file([p for p in parts if p not in ("self",)])
                if target and target != name:
                    deps.add(target)
        if name != os.path.join("kapi", "helpers.rs"):
            for m in C_CALL.finditer(code):
                target = cdefs.get(m.group(1))
                if target:
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
