#!/usr/bin/env python3
"""Where rprof's instructions go: the "P" lines of `RPROF_BENCH_PROFILE=HZ
make bench` (perf sampling the guest while rprof records), summed by
command, object and symbol, and rprof's own samples mapped to source lines
of the module (addr2line on the .ko: its code is one .text section, so a
symbol's value plus the sample's offset is an address in it).

Usage: bench_profile.py RESULTS_LOG RPROF_KO [--top N]
"""
import argparse
import collections
import re
import subprocess
import sys

LINE = re.compile(r"^P hz=(\d+) n=(\d+) total=(\d+) key=(.*)$")


def symbols(ko):
    """Function symbol name -> value in .text."""
    out = subprocess.run(["nm", "--defined-only", ko], capture_output=True, text=True, check=True).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            table[parts[2]] = int(parts[0], 16)
    return table


def source_lines(ko, addrs):
    """Address -> "func (file:line) <- caller (file:line) ..." (inline chain)."""
    if not addrs:
        return {}
    ordered = sorted(addrs)
    out = subprocess.run(["addr2line", "-f", "-i", "-C", "-a", "-e", ko] + [hex(a) for a in ordered],
                         capture_output=True, text=True, check=True).stdout
    result, cur, frames = {}, None, []
    lines = out.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("0x"):
            if cur is not None:
                result[cur] = frames
            cur, frames = int(lines[i], 16), []
            i += 1
            continue
        func = lines[i]
        where = lines[i + 1] if i + 1 < len(lines) else "?"
        where = re.sub(r"^.*/(src|rust|include|kernel|arch|mm)/", r"\1/", where)
        func = re.sub(r"::h[0-9a-f]{16}$", "", func)
        frames.append(f"{func.split('::')[-1] if len(func) > 60 else func} ({where})")
        i += 2
    if cur is not None:
        result[cur] = frames
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("ko")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--only", default=None,
                    help="a regular expression: only source lines whose inline chain matches it")
    args = ap.parse_args()
    runs = collections.defaultdict(list)
    totals = {}
    for line in open(args.results, errors="replace"):
        if line.startswith("B micro") or line.startswith("B error"):
            print(line.strip())
        m = LINE.match(line.strip())
        if not m:
            continue
        hz, n, total, key = int(m[1]), int(m[2]), int(m[3]), m[4]
        comm, symoff, dso = key.split("|", 2)
        runs[hz].append((n, comm, symoff, dso))
        totals[hz] = total
    base = None
    for line in open(args.results, errors="replace"):
        m = re.match(r"^B text base=(0x[0-9a-f]+)", line)
        if m:
            base = int(m[1], 16)
    if not runs:
        sys.exit("no P lines: was the bench run with RPROF_BENCH_PROFILE=HZ?")
    table = symbols(args.ko)
    for hz in sorted(runs):
        rows, total = runs[hz], totals[hz]
        print(f"== {hz or 'the microbenchmarks'}: {total} perf samples (the top {len(rows)} symbol+offset keys printed by the guest)")
        by = collections.Counter()
        for n, comm, symoff, dso in rows:
            by[(re.sub(r"/\d+.*", "", comm), dso)] += n
        print("-- by command and object")
        for (comm, dso), n in by.most_common(20):
            print(f"{100 * n / total:6.2f}%  {comm:20} {dso}")
        syms = collections.Counter()
        for n, comm, symoff, dso in rows:
            if comm.startswith("work"):
                continue
            syms[(symoff.rsplit("+", 1)[0], dso)] += n
        print("-- by symbol, outside the workload")
        for (sym, dso), n in syms.most_common(args.top):
            print(f"{100 * n / total:6.2f}%  {sym[:90]:90} {dso}")
        addrs = collections.Counter()
        for n, comm, symoff, dso in rows:
            if dso == "([unknown])" and base is not None:
                # A module loaded after perf started: a raw ip.
                addrs[int(symoff, 16) - base] += n
                continue
            if dso != "([rprof])" or "+" not in symoff:
                continue
            sym, off = symoff.rsplit("+", 1)
            if sym in table:
                addrs[table[sym] + int(off, 16)] += n
        lines = source_lines(args.ko, list(addrs))
        per_line = collections.Counter()
        for a, n in addrs.items():
            chain = lines.get(a, ["?"])
            if args.only and not re.search(args.only, " <- ".join(chain)):
                continue
            per_line[" <- ".join(chain[:3])] += n
        print(f"   ({sum(per_line.values())} samples of {total} in the lines shown below)")
        print("-- rprof's module by source line (innermost first)")
        for where, n in per_line.most_common(args.top):
            print(f"{100 * n / total:6.2f}%  {where}")
        print()


if __name__ == "__main__":
    main()
