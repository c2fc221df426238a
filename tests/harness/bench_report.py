#!/usr/bin/env python3
"""Turns the bench guest's "B ..." lines into figures.

    bench_report.py RESULTS_LOG... --json OUT.json [--markdown OUT.md]
                    [--meta KEY=VALUE]... [--readme README.md]

Reads the lines tests/harness/bench-guest.sh prints, computes medians over
the rounds, slowdowns, costs per sample and the per-stage cost model,
prints a table, writes every figure to OUT.json (one key per figure, each
with its unit) and, with --readme, replaces the table between the
`<!-- bench-table:begin -->` and `<!-- bench-table:end -->` markers.

Definitions (the README explains why, under -icount):
- work time: one round's figure is the span from the first copy's start
  to the last copy's end; the figure is the median over the rounds.
- slowdown % = (work time with X / work time without a profiler - 1) * 100.
- samples in the window = Hz * CPUs * work time (every CPU is sampled,
  busy or idle, and under -icount every CPU's instructions advance the
  one guest clock).
- cost per sample above the floor = (work time with X - with the floor)
  / samples in the window with X.
"""

import argparse
import json
import re
import statistics
import sys

PROFILERS = ["floor", "perf", "rprof"]


def parse(paths):
    info, runs, micro, stages, solo, errors = {}, [], [], [], [], []
    for line in lines_of(paths):
        line = line.strip()
        if not line.startswith("B "):
            continue
        words = line[2:].split()
        kind, kv = words[0], dict(w.split("=", 1) for w in words[1:] if "=" in w)
        if kind == "info":
            # The main boot's; the scaling boot (more vCPUs) says its
            # own in "scaleinfo".
            for k, v in kv.items():
                info.setdefault(k, v)
        elif kind == "run":
            runs.append(kv)
        elif kind == "micro":
            micro.append(kv)
        elif kind in ("stage", "chainstage"):
            # Call-chain runs carry their recursion depth.
            stages.append(kv)
        elif kind in ("solo", "chain"):
            solo.append(kv)
        elif kind == "error":
            errors.append(line)
        elif kind == "done":
            info["complete"] = "yes"
        elif kind == "host":
            # Figures measured on the host (report_rate), not in the guest.
            info.setdefault("_host", {}).update(kv)
        elif kind in ("scale", "rate", "daemon"):
            # The scaling boot (bench-guest.sh, PHASE=scale).
            info.setdefault("_scale", []).append(dict(kv, kind=kind))
        elif kind == "exitlat":
            # Exits and execs of sampled processes (issue 29).
            info.setdefault("_exitlat", []).append(kv)
        elif kind == "scaleinfo":
            info["_scaleinfo"] = kv
        elif kind == "scaledone":
            info["scale_complete"] = "yes"
    return info, runs, micro, stages, solo, errors


def lines_of(paths):
    """Every line of the logs, in order; a missing log (a boot that did
    not happen) gives none."""
    for path in [paths] if isinstance(paths, str) else paths:
        try:
            with open(path, errors="replace") as f:
                yield from f
        except FileNotFoundError:
            print(f"{path}: missing", file=sys.stderr)


def work_ns(run):
    """The span of a run, in ns: from the first copy's start to the last
    copy's end.  Under -icount, guest time is the instruction count of all
    CPUs together, so the span is the work plus everything else the guest
    ran meanwhile."""
    return int(run["span_ns"])


def median(xs):
    return statistics.median(xs) if xs else None


class Figures:
    def __init__(self):
        self.d = {}

    def add(self, key, value, unit):
        if value is not None:
            self.d[key] = {"value": round(value, 3) if isinstance(value, float) else value, "unit": unit}

    def get(self, key):
        v = self.d.get(key)
        return v["value"] if v else None


def compute(info, runs, micro, stages, solo):
    fig = Figures()
    scenarios = sorted({r["scenario"] for r in runs}, key=lambda s: ["one", "all"].index(s) if s in ("one", "all") else 9)
    freqs = sorted({int(r["hz"]) for r in runs if r["prof"] != "none"})

    def runs_of(sc, prof, hz):
        return [r for r in runs if r["scenario"] == sc and r["prof"] == prof and int(r["hz"]) == hz]

    def window(hz, rs, t):
        """Samples in the work's span: Hz x online CPUs x span."""
        return hz * int(rs[0].get("cpus", info.get("cpus", 1))) * t / 1e9

    for sc in scenarios:
        base = median([work_ns(r) for r in runs_of(sc, "none", 0)])
        fig.add(f"{sc}.none.work_ns", base, "ns")
        for hz in freqs:
            t, w = {}, {}
            for prof in PROFILERS:
                rs = runs_of(sc, prof, hz)
                if not rs:
                    continue
                t[prof] = median([work_ns(r) for r in rs])
                w[prof] = window(hz, rs, t[prof])
                fig.add(f"{sc}.{hz}hz.{prof}.work_ns", t[prof], "ns")
                fig.add(f"{sc}.{hz}hz.{prof}.rounds", len(rs), "runs in the median")
                fig.add(f"{sc}.{hz}hz.{prof}.slowdown_pct", (t[prof] / base - 1) * 100, "%")
                fig.add(f"{sc}.{hz}hz.{prof}.samples", median([int(r.get("samples", 0)) for r in rs]), "samples (whole session)")
                fig.add(f"{sc}.{hz}hz.{prof}.samples_in_span", w[prof], "samples (Hz x CPUs x span)")
                if prof in ("perf", "rprof"):
                    # Size and memory: what the recording takes.
                    samples = median([int(r.get("samples", 0)) for r in rs])
                    size = median([int(r.get("file_bytes", 0)) for r in rs])
                    if samples and size:
                        fig.add(f"{sc}.{hz}hz.{prof}.file_bytes_per_sample", size / samples, "bytes/sample (the output file)")
                    stream = median([int(r.get("stream_bytes", 0)) for r in rs])
                    if samples and stream:
                        fig.add(f"{sc}.{hz}hz.{prof}.stream_bytes_per_sample", stream / samples, "bytes/sample (the module's stream)")
                    rss = median([int(r.get("maxrss_kb", 0)) for r in rs])
                    if rss:
                        fig.add(f"{sc}.{hz}hz.{prof}.peak_rss_kb", rss, "KiB (peak RSS of the profiler)")
                if prof != "floor":
                    unit = "LOST records in perf.data" if prof == "perf" else "samples lost"
                    fig.add(f"{sc}.{hz}hz.{prof}.lost_max", max(int(r.get("lost", 0)) for r in rs), unit + ", worst round")
            # Each round on its own: what each tool delivered against the
            # nominal count, and the spread of the costs and the ratio
            # (a round's tool run against the same round's floor).
            per_round = {}
            for prof in PROFILERS:
                for r in runs_of(sc, prof, hz):
                    nominal = window(hz, [r], work_ns(r))
                    got = int(r.get("delivered") or r.get("samples") or 0)
                    per_round.setdefault(prof, {})[r.get("round")] = (work_ns(r), nominal, got)
                if prof in per_round:
                    pct = min(100.0 * got / nominal for _, nominal, got in per_round[prof].values() if nominal)
                    fig.add(f"{sc}.{hz}hz.{prof}.delivered_pct_min", pct,
                            "% of Hz x CPUs x span delivered, lowest round")
            floor_r = per_round.get("floor", {})
            cost_r = {}
            for prof in ("perf", "rprof"):
                for rnd, (span, nominal, _) in per_round.get(prof, {}).items():
                    if rnd in floor_r and nominal:
                        cost_r.setdefault(prof, {})[rnd] = (span - floor_r[rnd][0]) / nominal
                if cost_r.get(prof):
                    fig.add(f"{sc}.{hz}hz.{prof}.cost_above_floor_min", min(cost_r[prof].values()), "ns/sample, lowest round")
                    fig.add(f"{sc}.{hz}hz.{prof}.cost_above_floor_max", max(cost_r[prof].values()), "ns/sample, highest round")
            ratios = [cost_r["rprof"][k] / cost_r["perf"][k] for k in cost_r.get("rprof", {})
                      if cost_r.get("perf", {}).get(k, 0) > 0]
            if ratios:
                fig.add(f"{sc}.{hz}hz.ratio_rprof_perf_min", min(ratios), "ratio, lowest round")
                fig.add(f"{sc}.{hz}hz.ratio_rprof_perf_max", max(ratios), "ratio, highest round")
            if "floor" in t:
                fig.add(f"{sc}.{hz}hz.floor.cost_ns_per_sample", (t["floor"] - base) / w["floor"], "ns/sample")
            for prof in ("perf", "rprof"):
                if prof in t and "floor" in t:
                    fig.add(f"{sc}.{hz}hz.{prof}.cost_above_floor_ns_per_sample", (t[prof] - t["floor"]) / w[prof], "ns/sample")
            p = fig.get(f"{sc}.{hz}hz.perf.cost_above_floor_ns_per_sample")
            r = fig.get(f"{sc}.{hz}hz.rprof.cost_above_floor_ns_per_sample")
            if p and r is not None and p > 0:
                fig.add(f"{sc}.{hz}hz.ratio_rprof_perf", r / p, "ratio")

    # The ring-write microbenchmark: medians over the loads.
    names = {
        "rprof_ring_push": ("micro.rprof_ring_push_ns", "ns/record"),
        "rprof_handler_body": ("micro.rprof_handler_body_ns", "ns/record"),
        "rprof_handler_body,_user": ("micro.rprof_handler_body_user_ns", "ns/record"),
        "ftrace_ring_buffer_write": ("micro.ftrace_ring_buffer_write_ns", "ns/record"),
        "local_clock_pair": ("micro.local_clock_pair_ns", "ns"),
        "rprof_drain,_user_sample": ("micro.rprof_drain_user_sample_ns", "ns/record"),
    }
    for what, (key, unit) in names.items():
        fig.add(key, median([float(m["ns"]) for m in micro if m["what"] == what]), unit)
    ring, ftrace = fig.get("micro.rprof_ring_push_ns"), fig.get("micro.ftrace_ring_buffer_write_ns")
    if ring is not None and ftrace:
        fig.add("micro.ratio_rprof_ring_ftrace", ring / ftrace, "ratio")

    chains = [r for r in solo if "depth" in r]
    chain_stages = [st for st in stages if "depth" in st]
    solo = [r for r in solo if "depth" not in r]
    stages = [st for st in stages if "depth" not in st]

    # The per-stage cost model: CPU 0 alone, the bench module.
    none = [r for r in solo if r["prof"] == "none"]
    if none:
        base = work_ns(none[0])
        fig.add("solo.none.work_ns", base, "ns")
    for hz in sorted({int(r["hz"]) for r in solo if r["prof"] != "none"}):
        pre = f"solo.{hz}hz"
        floor = [r for r in solo if r["prof"] == "floor" and int(r["hz"]) == hz]
        bench = [r for r in solo if r["prof"] == "rprof-bench" and int(r["hz"]) == hz]
        perf = [r for r in solo if r["prof"] == "perf" and int(r["hz"]) == hz]
        if not (none and floor and bench):
            continue
        tf, tb = work_ns(floor[0]), work_ns(bench[0])
        wf, wb = window(hz, floor, tf), window(hz, bench, tb)
        fig.add(f"{pre}.floor.slowdown_pct", (tf / base - 1) * 100, "%")
        fig.add(f"{pre}.floor.cost_ns_per_sample", (tf - base) / wf, "ns/sample")
        if perf:
            tp = work_ns(perf[0])
            wp = window(hz, perf, tp)
            fig.add(f"{pre}.perf.slowdown_pct", (tp / base - 1) * 100, "%")
            fig.add(f"{pre}.perf.cost_above_floor_ns_per_sample", (tp - tf) / wp, "ns/sample")
            fig.add(f"{pre}.perf.reader_ns_per_sample", int(perf[0].get("reader_cpu_ns", 0)) / wp, "ns/sample")
        fig.add(f"{pre}.rprof_bench.slowdown_pct", (tb / base - 1) * 100, "%")
        fig.add(f"{pre}.rprof_bench.cost_above_floor_ns_per_sample", (tb - tf) / wb, "ns/sample")
        reader = int(bench[0].get("reader_cpu_ns", 0)) / wb
        fig.add(f"{pre}.stage.reader_ns_per_sample", reader, "ns/sample")
        by = {st["name"]: (int(st["runs"]), int(st["ns"])) for st in stages if int(st["hz"]) == hz}
        for name, (n, ns) in by.items():
            fig.add(f"{pre}.stage.{name}_ns_each", ns / n, "ns")
            fig.add(f"{pre}.stage.{name}_runs", n, "runs")
        if "drain_pass" in by and "drain_record" in by and "handler" in by:
            passes, pass_ns = by["drain_pass"]
            recs, rec_ns = by["drain_record"]
            overhead = (pass_ns - rec_ns) / max(recs, 1)
            fig.add(f"{pre}.stage.drain_pass_overhead_ns_per_record", overhead, "ns/record")
            fig.add(f"{pre}.stage.drain_records_per_pass", recs / max(passes, 1), "records")
            handler = by["handler"][1] / by["handler"][0]
            fig.add(f"{pre}.stage.sum_ns_per_sample", handler + rec_ns / max(recs, 1) + overhead + reader, "ns/sample")

    # Call chains: perf -g and rprof -g (bench module) against the floor,
    # the workload's loop `depth` calls deep; per stage against the
    # chainless run at the same rate, if there was one.
    for depth in sorted({int(r["depth"]) for r in chains}):
        pre = f"chain.{depth}deep"
        of = lambda prof: [r for r in chains if int(r["depth"]) == depth and r["prof"] == prof]
        floor, perf, rp = of("floor"), of("perf-g"), of("rprof-g")
        if not (floor and rp):
            continue
        hz = int(rp[0]["hz"])
        tf = work_ns(floor[0])
        fig.add(f"{pre}.hz", hz, "Hz")
        fig.add(f"{pre}.user_frames", float(rp[0].get("user_frames", 0)), "user frames per chain (mean)")
        costs = {}
        for prof, rs in (("perf", perf), ("rprof", rp)):
            if rs:
                t = work_ns(rs[0])
                costs[prof] = (t - tf) / window(hz, rs, t)
                fig.add(f"{pre}.{prof}.cost_above_floor_ns_per_sample", costs[prof], "ns/sample")
        if costs.get("perf"):
            fig.add(f"{pre}.ratio_rprof_perf", costs["rprof"] / costs["perf"], "ratio")
        # Stage lines before the DWARF modes carry no prof: rprof-g's.
        stages_of = lambda prof: {st["name"]: (int(st["runs"]), int(st["ns"])) for st in chain_stages
                                  if int(st["depth"]) == depth and st.get("prof", "rprof-g") == prof}
        by = stages_of("rprof-g")
        for name, (n, ns) in by.items():
            fig.add(f"{pre}.stage.{name}_ns_each", ns / n, "ns")
        flat_rec = fig.get(f"solo.{hz}hz.stage.drain_record_ns_each")
        frames = fig.get(f"{pre}.user_frames")
        if "drain_record" in by and flat_rec is not None and frames:
            rec = by["drain_record"][1] / by["drain_record"][0]
            fig.add(f"{pre}.stage.drain_ns_per_frame", (rec - flat_rec) / frames, "ns/frame")
        if rp[0].get("file_bytes") and rp[0].get("samples") and int(rp[0]["samples"]):
            fig.add(f"{pre}.rprof.file_bytes_per_sample", int(rp[0]["file_bytes"]) / int(rp[0]["samples"]), "bytes")
        # The DWARF modes, on the workload without frame pointers, against
        # the floor on it: rprof's unwind tables (their compile and upload
        # inside the span) and perf's stack copies (unwound after the span,
        # in perf report: not counted here, which favours perf).
        nfloor, pd, rd = of("floor-nofp"), of("perf-dwarf"), of("rprof-dwarf")
        if not (nfloor and rd):
            continue
        tn = work_ns(nfloor[0])
        fig.add(f"{pre}.rprof_dwarf.user_frames", float(rd[0].get("user_frames", 0)), "user frames per chain (mean)")
        for prof, rs in (("perf_dwarf", pd), ("rprof_dwarf", rd)):
            if not rs:
                continue
            t = work_ns(rs[0])
            costs[prof] = (t - tn) / window(hz, rs, t)
            fig.add(f"{pre}.{prof}.cost_above_floor_ns_per_sample", costs[prof], "ns/sample")
            n = int(rs[0].get("samples", 0))
            if n and rs[0].get("file_bytes"):
                fig.add(f"{pre}.{prof}.file_bytes_per_sample", int(rs[0]["file_bytes"]) / n, "bytes")
        if costs.get("perf_dwarf"):
            fig.add(f"{pre}.ratio_rprof_dwarf_perf_dwarf", costs["rprof_dwarf"] / costs["perf_dwarf"], "ratio")
        if costs.get("rprof"):
            fig.add(f"{pre}.ratio_rprof_dwarf_rprof_fp", costs["rprof_dwarf"] / costs["rprof"], "ratio")
        for name, (n, ns) in stages_of("rprof-dwarf").items():
            fig.add(f"{pre}.rprof_dwarf.stage.{name}_ns_each", ns / n, "ns")
    scale(fig, info)
    host = info.get("_host", {})
    if "report_decode_s" in host:
        f = lambda k: float(host[k])
        fig.add("report.stream_mb", f("report_stream_mb"), "MB (10^6 bytes) of stream")
        fig.add("report.samples", f("report_samples"), "samples")
        fig.add("report.read_mb_per_s", f("report_file_mb") / max(f("report_read_s"), 1e-9), "MB/s (file read and parsed)")
        fig.add("report.decode_mb_per_s", f("report_stream_mb") / max(f("report_decode_s"), 1e-9), "MB/s (stream decoded and counted)")
        fig.add("report.decode_msamples_per_s", f("report_samples") / 1e6 / max(f("report_decode_s"), 1e-9), "M samples/s")
        fig.add("report.rows_s", f("report_rows_s"), "s (symbolized report table)")
        fig.add("report.pprof_s", f("report_pprof_s"), "s (pprof export)")
    if "sym_first_s" in host:
        f = lambda k: float(host[k])
        n = f("sym_addresses")
        fig.add("symbolize.addresses", int(n), "distinct addresses")
        fig.add("symbolize.file_mb", f("sym_file_mb"), "MB (the ELF file)")
        fig.add("symbolize.symbols", int(f("sym_symbols")), "function symbols in the file")
        fig.add("symbolize.functions_hit", int(f("sym_functions")), "functions the addresses fell in")
        fig.add("symbolize.named_pct", 100 * f("sym_named") / max(n, 1), "% of the addresses named")
        fig.add("symbolize.first_us_per_address", f("sym_first_s") * 1e6 / max(n, 1), "us/address (first report)")
        fig.add("symbolize.cached_us_per_address", f("sym_cached_s") * 1e6 / max(n, 1), "us/address (cached)")
    exitlat(fig, info)
    return fig


EXITLAT_PROFS = ["none", "perf", "rprof", "rprof-pin"]


def exitlat(fig, info):
    """Exits and execs of sampled processes: exitlat's medians and 90th
    percentiles under each profiler (rprof-pin: every record holding its
    address space until the drain, as rprof did before issue 29)."""
    for r in info.get("_exitlat", []):
        pre = f"exitlat.{r['mode']}.{r['prof']}"
        for k, unit in (("median_us", "us, median"), ("p90_us", "us, 90th percentile"),
                        ("freed_median_us", "us until the memory is free, median"),
                        ("freed_p90_us", "us until the memory is free, 90th percentile")):
            if k in r:
                fig.add(f"{pre}.{k}", float(r[k]), unit)
        if "late" in r:
            fig.add(f"{pre}.late", int(r["late"]), "children whose memory was not free within 2 s")


def scale(fig, info):
    """The scaling boot: slowdowns and costs with 1, 2, 4 CPUs online (a
    workload copy on each), which rates lose samples, rprofd's RSS."""
    rows = info.get("_scale", [])
    sc = [r for r in rows if r["kind"] == "scale" and "span_ns" in r]
    for n in sorted({int(r["cpus"]) for r in sc}):
        of = lambda prof: [r for r in sc if int(r["cpus"]) == n and r["prof"] == prof]
        none = of("none")
        if not none:
            continue
        base = work_ns(none[0])
        pre = f"scale.{n}cpu"
        fig.add(f"{pre}.none.work_ns", base, "ns")
        t, w = {}, {}
        for prof in PROFILERS:
            rs = of(prof)
            if not rs:
                continue
            hz = int(rs[0]["hz"])
            t[prof] = work_ns(rs[0])
            w[prof] = hz * n * t[prof] / 1e9
            fig.add(f"{pre}.hz", hz, "Hz per CPU")
            fig.add(f"{pre}.{prof}.slowdown_pct", (t[prof] / base - 1) * 100, "%")
            if prof != "floor":
                fig.add(f"{pre}.{prof}.lost", int(rs[0].get("lost", 0)), "samples lost" if prof == "rprof" else "LOST records")
        for prof in ("perf", "rprof"):
            if prof in t and "floor" in t:
                fig.add(f"{pre}.{prof}.cost_above_floor_ns_per_sample", (t[prof] - t["floor"]) / w[prof], "ns/sample")
        p, r = fig.get(f"{pre}.perf.cost_above_floor_ns_per_sample"), fig.get(f"{pre}.rprof.cost_above_floor_ns_per_sample")
        if p and r is not None and p > 0:
            fig.add(f"{pre}.ratio_rprof_perf", r / p, "ratio")
    # A rate counts as kept up with when the run finished (a workload
    # line) and lost nothing for want of room (rprof: its rings and event
    # buffer; perf: its LOST records); the figure is the highest such rate
    # tried (every rate below it, too).  rprof's other losses (a sample
    # whose mapping changed before the drain: no_mapping, at a fork) are
    # counted apart.
    rates = [r for r in rows if r["kind"] == "rate"]
    fig.add("rate.rprof.other_lost", sum(int(r.get("lost", 0)) - int(r.get("lost_capacity", r.get("lost", 0)))
                                         for r in rates if r["prof"] == "rprof"),
            "samples lost for another reason than room (no_mapping, ...), all rate runs together")
    for n in sorted({int(r["cpus"]) for r in rates if "cpus" in r}):
        for prof in ("perf", "rprof"):
            rs = sorted((r for r in rates if int(r.get("cpus", 0)) == n and r["prof"] == prof), key=lambda r: int(r["hz"]))
            best = 0
            for r in rs:
                lost = int(r.get("lost_capacity", r.get("lost", 0)))
                ok = "span_ns" in r and lost == 0
                fig.add(f"rate.{n}cpu.{prof}.{r['hz']}hz.lost", lost if "span_ns" in r else None,
                        "samples lost for want of room" if prof == "rprof" else "LOST records")
                if not ok:
                    break
                best = int(r["hz"])
            if rs:
                fig.add(f"rate.{n}cpu.{prof}.max_lossfree_hz", best, "Hz per CPU (highest tried with no loss; 0: none)")
                fig.add(f"rate.{n}cpu.{prof}.max_tried_hz", int(rs[-1]["hz"]), "Hz per CPU")
    for r in rows:
        if r["kind"] == "daemon" and r.get("maxrss_kb"):
            fig.add("daemon.peak_rss_kb", int(r["maxrss_kb"]), "KiB (rprofd's peak RSS)")
            fig.add("daemon.cpus", int(r.get("cpus", 0)), "CPUs busy")
            fig.add("daemon.hz", int(r.get("hz", 0)), "Hz per CPU")
            fig.add("daemon.profiles", int(r.get("profiles", 0)), "profiles written")


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


# A tool that delivered less than this share of the nominal samples in any
# round did not do what the cell says it measured.
SHORT_PCT = 95


def spread(g, key, digits):
    """The median of `key` and the rounds' range: `628 (610-650)`."""
    mid = key if key.startswith("ratio") else key + "_ns_per_sample"
    lo, hi = g(key + "_min"), g(key + "_max")
    if lo is None or hi is None:
        return fmt(g(mid), digits)
    return f"{fmt(g(mid), digits)} ({fmt(lo, digits)}-{fmt(hi, digits)})"


def short_runs(fig):
    """The cells in which a tool delivered less than SHORT_PCT % of the
    nominal samples in some round."""
    return sorted((k.rsplit(".", 1)[0], v["value"]) for k, v in fig.d.items()
                  if k.endswith(".delivered_pct_min") and v["value"] < SHORT_PCT)


def markdown(fig, meta, info):
    d = fig.d
    scen_names = {"one": "one CPU busy", "all": "all CPUs busy"}
    lines = []
    got = [v["value"] for k, v in d.items() if k.endswith(".rounds")]
    rounds = f"{min(got)}" if got and min(got) == max(got) else f"{min(got, default=0)} to {max(got, default=0)}"
    lines.append(f"Measured {meta.get('date', '?')} on {meta.get('machine', '?')}; guest: Linux {info.get('kernel', '?')} "
                 f"(benchmark kernel), {info.get('cpus', '?')} vCPUs, QEMU TCG `{meta.get('icount', '?')}`, "
                 f"perf {info.get('perf', '?')}; medians of {rounds} interleaved rounds.")
    if info.get("complete") != "yes":
        lines.append("")
        lines.append("**The guest did not finish: figures from an incomplete run.**")
    lines.append("")
    lines.append("| scenario | Hz/CPU | floor | perf record | rprof record | perf ns/sample above floor (rounds' range) "
                 "| rprof ns/sample above floor (range) | rprof/perf (range) | delivered, lowest round: perf / rprof |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    freqs = sorted({int(k.split(".")[1][:-2]) for k in d if re.match(r"^(one|all)\.\d+hz\.", k)})
    for sc in ("one", "all"):
        for hz in freqs:
            p = f"{sc}.{hz}hz"
            if f"{p}.floor.slowdown_pct" not in d:
                continue
            g = lambda k: fig.get(f"{p}.{k}")
            lines.append(
                f"| {scen_names[sc]} | {hz} | {fmt(g('floor.slowdown_pct'), 2)} % | {fmt(g('perf.slowdown_pct'), 2)} % | "
                f"{fmt(g('rprof.slowdown_pct'), 2)} % | {spread(g, 'perf.cost_above_floor', 0)} | "
                f"{spread(g, 'rprof.cost_above_floor', 0)} | {spread(g, 'ratio_rprof_perf', 2)} | "
                f"{fmt(g('perf.delivered_pct_min'), 1)} % / {fmt(g('rprof.delivered_pct_min'), 1)} % |"
            )
    lines.append("")
    lines.append(f"Delivered: samples each tool handed its reader (perf: written to perf.data; rprof: delivered "
                 f"by the module), against Hz x online CPUs x the work's span; a session outlasts the span, so "
                 f"100 % is the floor of a complete run.  A run below {SHORT_PCT} % fails `make bench`.  "
                 f"Ranges are the rounds' own figures (each tool run against the same round's floor); the "
                 f"headline ratio is that of the median costs, so it can fall outside the range of the "
                 f"rounds' ratios.")
    lossy = sorted(k.rsplit(".", 1)[0] for k, v in d.items() if k.endswith(".lost_max") and v["value"])
    if lossy:
        lines.append("")
        lines.append("Runs with loss (worst round; medians include them): " + ", ".join(
            f"{k} {d[k + '.lost_max']['value']} ({d[k + '.lost_max']['unit'].split(',')[0]})" for k in lossy) + ".")
    size_rows = [(sc, hz) for sc in ("one", "all") for hz in freqs if f"{sc}.{hz}hz.rprof.file_bytes_per_sample" in d]
    if size_rows:
        lines.append("")
        lines.append("Size and memory: bytes per sample in the output file (rprof: and in the module's stream), "
                     "peak RSS of the profiler's process:")
        lines.append("")
        lines.append("| scenario | Hz/CPU | perf.data bytes/sample | rprof.data bytes/sample | rprof stream bytes/sample "
                     "| perf record peak RSS | rprof record peak RSS |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|")
        v = lambda k, dg=1: fmt(d[k]["value"], dg) if k in d else "-"
        for sc, hz in size_rows:
            p = f"{sc}.{hz}hz"
            lines.append(f"| {scen_names.get(sc, sc)} | {hz} | {v(p + '.perf.file_bytes_per_sample')} | "
                         f"{v(p + '.rprof.file_bytes_per_sample')} | {v(p + '.rprof.stream_bytes_per_sample')} | "
                         f"{v(p + '.perf.peak_rss_kb', 0)} KiB | {v(p + '.rprof.peak_rss_kb', 0)} KiB |")
    lines.append("")
    m = lambda k: fig.get(f"micro.{k}")
    lines.append(
        f"Ring write (task context, one CPU): rprof ring push {fmt(m('rprof_ring_push_ns'), 2)} ns, "
        f"rprof handler body {fmt(m('rprof_handler_body_ns'), 2)} ns (a user sample, its mapping named: "
        f"{fmt(m('rprof_handler_body_user_ns'), 2)} ns), ftrace ring_buffer "
        f"{fmt(m('ftrace_ring_buffer_write_ns'), 2)} ns per record (ratio {fmt(m('ratio_rprof_ring_ftrace'), 3)}); "
        f"the drain of a user sample (ring pop, resolution, SAMPLE record, reference dropped; no stage timers) "
        f"{fmt(m('rprof_drain_user_sample_ns'), 2)} ns."
    )
    solo_freqs = sorted({int(k.split(".")[1][:-2]) for k in d if re.match(r"^solo\.\d+hz\.stage\.", k)})
    if solo_freqs:
        lines.append("")
        lines.append("CPU 0 alone (other CPUs offline), one session each; rprof is the bench build, which times each stage with "
                     "`local_clock()`; ns per sample (per record for the drain):")
        lines.append("")
        lines.append("| Hz | floor | perf above floor | of which perf's reader | rprof above floor | rprof handler | drain /record | of which resolve user / kernel | drain pass | rprof's reader | sum of rprof's stages | new cookie (each) |")
        lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for hz in solo_freqs:
            g = lambda k: fig.get(f"solo.{hz}hz.{k}")
            lines.append(
                f"| {hz} | {fmt(g('floor.cost_ns_per_sample'), 0)} | {fmt(g('perf.cost_above_floor_ns_per_sample'), 0)} | "
                f"{fmt(g('perf.reader_ns_per_sample'), 0)} | {fmt(g('rprof_bench.cost_above_floor_ns_per_sample'), 0)} | "
                f"{fmt(g('stage.handler_ns_each'), 0)} | {fmt(g('stage.drain_record_ns_each'), 0)} | "
                f"{fmt(g('stage.resolve_user_ns_each'), 0)} / {fmt(g('stage.resolve_kernel_ns_each'), 0)} | "
                f"{fmt(g('stage.drain_pass_overhead_ns_per_record'), 0)} | {fmt(g('stage.reader_ns_per_sample'), 0)} | "
                f"{fmt(g('stage.sum_ns_per_sample'), 0)} | {fmt(g('stage.new_cookie_ns_each'), 0)} |"
            )
    counts = sorted({int(k.split(".")[1][:-3]) for k in d if re.match(r"^scale\.\d+cpu\.", k)})
    if counts:
        si = info.get("_scaleinfo", {})
        lines.append("")
        lines.append(f"Scaling: a {si.get('vcpus', '?')}-vCPU guest with 1, 2 or 4 CPUs online (the others offline), a "
                     f"workload copy on each ({si.get('iterations', '?')} steps), one run each at "
                     f"{si.get('hz', '?')} Hz per CPU; then the same at higher rates: the highest at which nothing was lost for want of room "
                     f"(the kernel's rate cap raised, its automatic lowering off)"
                     + ("" if info.get("scale_complete") == "yes" else "; **the scaling guest did not finish**") + ":")
        lines.append("")
        lines.append("| CPUs | floor | perf record | rprof record | perf ns/sample above floor | rprof ns/sample above floor | rprof/perf | loss-free up to: perf | rprof |")
        lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in counts:
            g = lambda k: fig.get(f"scale.{n}cpu.{k}")
            lf = lambda prof: fig.get(f"rate.{n}cpu.{prof}.max_lossfree_hz")
            mx = lambda prof: fig.get(f"rate.{n}cpu.{prof}.max_tried_hz")
            hz = lambda prof: "-" if lf(prof) is None else (f"{lf(prof)} Hz" + (" (all tried)" if lf(prof) == mx(prof) else ""))
            lines.append(
                f"| {n} | {fmt(g('floor.slowdown_pct'), 2)} % | {fmt(g('perf.slowdown_pct'), 2)} % | "
                f"{fmt(g('rprof.slowdown_pct'), 2)} % | {fmt(g('perf.cost_above_floor_ns_per_sample'), 0)} | "
                f"{fmt(g('rprof.cost_above_floor_ns_per_sample'), 0)} | {fmt(g('ratio_rprof_perf'), 2)} | {hz('perf')} | {hz('rprof')} |"
            )
        other = fig.get("rate.rprof.other_lost")
        if other:
            lines.append("")
            lines.append(f"\"Loss-free\" counts what is lost for want of room.  rprof also lost {other} samples in these "
                         "runs to no_mapping: the workload's parent forks its copies, and the kernel write-locks "
                         "every mapping of a process that forks, which rprof's drain must take for a change "
                         "(tests/fuzz/FOUND.md 5).")
        if "daemon.peak_rss_kb" in d:
            lines.append("")
            g = fig.get
            lines.append(f"rprofd (`rprof daemon`, 1 s profiles) over the workload on {g('daemon.cpus')} CPUs at "
                         f"{g('daemon.hz')} Hz: peak RSS {g('daemon.peak_rss_kb')} KiB, {g('daemon.profiles')} profiles.")
    if "report.decode_mb_per_s" in d:
        g = fig.get
        lines.append("")
        lines.append(f"Reading a recording on the host (`rprof report` and `rprofd` decode with the same code; "
                     f"tools/rprof-report/examples/report_rate.rs): {fmt(g('report.stream_mb'))} MB of stream, "
                     f"{fmt(g('report.samples'), 0)} samples: file read and parsed at {fmt(g('report.read_mb_per_s'), 0)} MB/s, "
                     f"decoded and counted at {fmt(g('report.decode_mb_per_s'), 0)} MB/s "
                     f"({fmt(g('report.decode_msamples_per_s'), 2)} M samples/s); the symbolized table in "
                     f"{fmt(g('report.rows_s'), 3)} s, the pprof export in {fmt(g('report.pprof_s'), 3)} s.")
    if "symbolize.first_us_per_address" in d:
        g = fig.get
        lines.append("")
        lines.append(f"Naming samples on the host (tools/rprof-report/examples/symbolize_rate.rs): "
                     f"{g('symbolize.addresses')} distinct addresses across rprof's own executable "
                     f"({fmt(g('symbolize.file_mb'))} MB, {g('symbolize.symbols')} function symbols), "
                     f"{fmt(g('symbolize.named_pct'))} % named, in {g('symbolize.functions_hit')} functions: "
                     f"{fmt(g('symbolize.first_us_per_address'), 2)} us an address for the first report (file read, "
                     f"symbols demangled), {fmt(g('symbolize.cached_us_per_address'), 2)} us once cached.")
    depths = sorted({int(k.split(".")[1][:-4]) for k in d if re.match(r"^chain\.\d+deep\.", k)})
    if depths:
        lines.append("")
        lines.append("Call chains, CPU 0 alone: `perf record -g` (frame pointers) and `rprof record -g` (bench build) with the "
                     "workload's loop called through a recursion; ns per sample above the floor at the same rate, rprof's stages "
                     "per sample (per record for the drain; per frame: the drain's record cost above the chainless run's, "
                     "divided by the user frames):")
        lines.append("")
        lines.append("| Hz | workload's recursion depth | mean user frames per chain | perf -g above floor | rprof -g above floor | rprof/perf | rprof handler | drain /record | drain per frame |")
        lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for depth in depths:
            g = lambda k: fig.get(f"chain.{depth}deep.{k}")
            lines.append(
                f"| {fmt(g('hz'), 0)} | {depth} | {fmt(g('user_frames'), 1)} | {fmt(g('perf.cost_above_floor_ns_per_sample'), 0)} | "
                f"{fmt(g('rprof.cost_above_floor_ns_per_sample'), 0)} | {fmt(g('ratio_rprof_perf'), 2)} | "
                f"{fmt(g('stage.handler_ns_each'), 0)} | {fmt(g('stage.drain_record_ns_each'), 0)} | "
                f"{fmt(g('stage.drain_ns_per_frame'), 1)} |"
            )
        if any(fig.get(f"chain.{depth}deep.rprof_dwarf.cost_above_floor_ns_per_sample") is not None for depth in depths):
            lines.append("")
            lines.append("Without frame pointers (the same workload built `-fomit-frame-pointer`): `perf record --call-graph "
                         "dwarf` (8 KiB of stack copied per sample; its unwinding, in `perf report`, is not counted) and "
                         "`rprof record --call-graph dwarf` (unwind tables walked in the handler; their compile and upload "
                         "counted), ns per sample above the floor on that workload; rprof's frame-pointer walk of the "
                         "frame-pointer build at the same depth from the table above; file bytes per sample:")
            lines.append("")
            lines.append("| Hz | depth | rprof user frames per chain | perf dwarf above floor | rprof tables above floor | "
                         "tables/perf dwarf | tables/rprof fp | rprof handler (tables) | bytes/sample perf dwarf | "
                         "rprof tables | rprof fp |")
            lines.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for depth in depths:
                g = lambda k: fig.get(f"chain.{depth}deep.{k}")
                lines.append(
                    f"| {fmt(g('hz'), 0)} | {depth} | {fmt(g('rprof_dwarf.user_frames'), 1)} | "
                    f"{fmt(g('perf_dwarf.cost_above_floor_ns_per_sample'), 0)} | "
                    f"{fmt(g('rprof_dwarf.cost_above_floor_ns_per_sample'), 0)} | {fmt(g('ratio_rprof_dwarf_perf_dwarf'), 2)} | "
                    f"{fmt(g('ratio_rprof_dwarf_rprof_fp'), 2)} | {fmt(g('rprof_dwarf.stage.handler_ns_each'), 0)} | "
                    f"{fmt(g('perf_dwarf.file_bytes_per_sample'), 0)} | {fmt(g('rprof_dwarf.file_bytes_per_sample'), 0)} | "
                    f"{fmt(g('rprof.file_bytes_per_sample'), 0)} |"
                )
    modes = [m for m in ("exit", "exec") if any(fig.get(f"exitlat.{m}.{p}.median_us") is not None for p in EXITLAT_PROFS)]
    if modes:
        lines.append("")
        lines.append("Exits and execs of sampled processes, CPU 0 alone (the bench build): with 500 idle processes beside "
                     "them, 20 children each touch 16 MiB, spin 20 ms and exit (or exec); median (90th percentile) "
                     "microseconds from `exit()` to the parent's `waitpid()` (from `execve()` to the new image's start). "
                     "*rprof, pinning* holds every sampled address space until the drain, as rprof did before it named "
                     "mappings (the bench module's `pin_mm`): the exit is quick because the address space is torn down "
                     "later, by the drain. (When the memory is free again is in `bench.json`, `exitlat.*.freed_*`.)")
        lines.append("")
        lines.append("| | " + " | ".join(f"{m} latency" for m in modes) + " |")
        lines.append("|---|" + "---:|" * len(modes))
        names = {"none": "no profiler", "perf": "perf record", "rprof": "rprof record", "rprof-pin": "rprof, pinning"}
        for p in EXITLAT_PROFS:
            cells = []
            for m in modes:
                g = lambda k: fig.get(f"exitlat.{m}.{p}.{k}")
                cells.append(f"{fmt(g('median_us'), 0)} ({fmt(g('p90_us'), 0)})")
            lines.append(f"| {names[p]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def update_readme(path, table):
    with open(path) as f:
        text = f.read()
    begin, end = "<!-- bench-table:begin -->", "<!-- bench-table:end -->"
    if begin not in text or end not in text:
        sys.exit(f"{path}: no {begin} ... {end} markers")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(head + begin + "\n" + table + end + tail)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log", nargs="+")
    ap.add_argument("--json", required=True)
    ap.add_argument("--markdown")
    ap.add_argument("--readme")
    ap.add_argument("--meta", action="append", default=[])
    a = ap.parse_args()
    info, runs, micro, stages, solo, errors = parse(a.log)
    meta = dict(m.split("=", 1) for m in a.meta)
    meta.update({f"guest_{k}": v for k, v in info.items() if not k.startswith("_")})
    fig = compute(info, runs, micro, stages, solo)
    table = markdown(fig, meta, info)
    out = {"meta": meta, "figures": fig.d, "errors": errors,
           "raw": {"runs": runs, "micro": micro, "stages": stages, "solo": solo}}
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1, sort_keys=False)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(table)
    short = short_runs(fig)
    if a.readme and info.get("complete") == "yes" and not short:
        update_readme(a.readme, table)
    elif a.readme:
        print(f"{a.readme} left alone: " + ("the guest did not finish" if info.get("complete") != "yes"
                                          else "a tool delivered too few samples"))
    print(table)
    for e in errors:
        print("error from the guest:", e)
    if not runs:
        sys.exit("no runs in " + " ".join(a.log))
    if short:
        sys.exit("make bench: delivered less than %d %% of the nominal samples in a round: %s" % (
            SHORT_PCT, ", ".join(f"{k} {v:.1f} %" for k, v in short)))


if __name__ == "__main__":
    main()
