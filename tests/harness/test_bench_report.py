"""bench_report.py on a made-up guest log whose figures are known."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_report  # noqa: E402

# One CPU; 1 s of work alone; the floor adds 1 ms and perf 2 ms, rprof 3 ms
# at 1000 Hz: 1000 samples in the span (almost), so the floor costs 1 us a
# sample and perf 1 us, rprof 2 us above it.
LOG = """\
noise that is not a figure
B info kernel=6.12.117 cpus=1 clocksource=tsc perf=6.1.187 iterations=1 rounds=2
B micro run=1 what=rprof_ring_push ns=70.00
B micro run=2 what=rprof_ring_push ns=72.00
B micro run=3 what=rprof_ring_push ns=71.00
B micro run=1 what=ftrace_ring_buffer_write ns=400.00
B run round={r} scenario=one prof=none hz=0 copies=1 ns=1000000000 span_ns=1000000000 reader_cpu_ns=0 cpus=1 samples=0
B run round={r} scenario=one prof=floor hz=1000 copies=1 ns=1001000000 span_ns=1001000000 reader_cpu_ns=0 cpus=1 samples=1001
B run round={r} scenario=one prof=perf hz=1000 copies=1 ns=1002000000 span_ns=1002000000 reader_cpu_ns=5 cpus=1 samples=1002
B run round={r} scenario=one prof=rprof hz=1000 copies=1 ns=1003000000 span_ns=1003000000 reader_cpu_ns=5 cpus=1 samples=1003
"""


def write_log(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)
    f.write(text)
    f.close()
    return f.name


class Report(unittest.TestCase):
    def figures(self, text):
        path = write_log(text)
        try:
            info, runs, micro, stages, solo, errors = bench_report.parse(path)
        finally:
            os.unlink(path)
        return info, bench_report.compute(info, runs, micro, stages, solo)

    def test_host_report_rate(self):
        host = "B host report_stream_mb=64.0 report_file_mb=65.0 report_samples=1600000 report_read_s=0.5 " \
               "report_decode_s=0.8 report_rows_s=0.01 report_pprof_s=0.02 report_lines=100\n"
        host += "B host sym_addresses=200000 sym_named=190000 sym_functions=3000 sym_symbols=5000 sym_file_mb=4.2 " \
                "sym_first_s=0.8 sym_cached_s=0.2\n"
        info, fig = self.figures(LOG.format(r=1) + host + "B done\n")
        self.assertAlmostEqual(fig.get("symbolize.first_us_per_address"), 4.0)
        self.assertAlmostEqual(fig.get("symbolize.named_pct"), 95.0)
        self.assertAlmostEqual(fig.get("report.decode_mb_per_s"), 80.0)
        self.assertAlmostEqual(fig.get("report.decode_msamples_per_s"), 2.0)
        self.assertAlmostEqual(fig.get("report.read_mb_per_s"), 130.0)
        table = bench_report.markdown(fig, {}, info)
        self.assertIn("decoded and counted at 80 MB/s", table)
        self.assertIn("200000 distinct addresses across rprof's own executable (4.2 MB, 5000 function symbols), "
                      "95.0 % named, in 3000 functions: 4.00 us an address", table)

    def test_scaling_boot(self):
        # Two CPUs online: alone 1 s, the floor +2 ms, perf +6 ms, rprof
        # +4 ms at 1000 Hz (2000 samples a second): perf 2 us a sample
        # above the floor, rprof 1 us.  perf keeps up with 10 kHz and
        # loses at 20 kHz; rprof keeps up with both (its one loss at 10 kHz
        # is not for want of room), and at 40 kHz its run ends without a
        # workload line.
        scale = """\
B info kernel=6.12.117 cpus=4 clocksource=tsc perf=6.1.187 iterations=5 rounds=2
B scaleinfo vcpus=4 hz=1000 iterations=5
B scale prof=none hz=0 copies=2 span_ns=1000000000 cpus=2 samples=0 lost=0
B scale prof=floor hz=1000 copies=2 span_ns=1002000000 cpus=2 samples=2004 lost=0
B scale prof=perf hz=1000 copies=2 span_ns=1006000000 cpus=2 samples=2012 lost=0
B scale prof=rprof hz=1000 copies=2 span_ns=1004000000 cpus=2 samples=2008 lost=0
B rate prof=perf hz=10000 copies=2 span_ns=1100000000 cpus=2 lost=0
B rate prof=rprof hz=10000 copies=2 span_ns=1050000000 cpus=2 lost=1 lost_capacity=0
B rate prof=perf hz=20000 copies=2 span_ns=1200000000 cpus=2 lost=7
B rate prof=rprof hz=20000 copies=2 span_ns=1100000000 cpus=2 lost=0
B rate prof=rprof hz=40000 cpus=2 lost=0
B daemon hz=1000 cpus=4 status=0 maxrss_kb=5120 profiles=6
B scaledone
"""
        info, fig = self.figures(LOG.format(r=1) + "B done\n" + scale)
        self.assertAlmostEqual(fig.get("scale.2cpu.rprof.slowdown_pct"), 0.4, places=3)
        self.assertAlmostEqual(fig.get("scale.2cpu.perf.cost_above_floor_ns_per_sample"), 4e6 / 2012, places=1)
        self.assertAlmostEqual(fig.get("scale.2cpu.rprof.cost_above_floor_ns_per_sample"), 2e6 / 2008, places=1)
        self.assertAlmostEqual(fig.get("scale.2cpu.ratio_rprof_perf"), (2e6 / 2008) / (4e6 / 2012), places=3)
        self.assertEqual(fig.get("rate.2cpu.perf.max_lossfree_hz"), 10000)
        self.assertEqual(fig.get("rate.2cpu.rprof.max_lossfree_hz"), 20000)
        self.assertEqual(fig.get("rate.2cpu.rprof.max_tried_hz"), 40000)
        self.assertEqual(fig.get("daemon.peak_rss_kb"), 5120)
        table = bench_report.markdown(fig, {}, info)
        self.assertIn("| 2 | 0.20 % | 0.60 % | 0.40 % | 1988 | 996 | 0.50 | 10000 Hz | 20000 Hz |", table)
        self.assertIn("peak RSS 5120 KiB", table)
        # The one no_mapping loss does not make 10 kHz lossy, and is told.
        self.assertEqual(fig.get("rate.rprof.other_lost"), 1)
        self.assertIn("rprof also lost 1 samples in these runs to no_mapping", table)
        self.assertNotIn("did not finish", table)
        # The main boot's info stands (the scaling boot's own is apart).
        self.assertEqual(info.get("cpus"), "1")
        self.assertIn(", 1 vCPUs,", table)

    def test_exit_and_exec_latency(self):
        lines = ""
        for mode, word in (("exit", "exitlat"), ("exec", "execlat")):
            for i, prof in enumerate(("none", "perf", "rprof", "rprof-pin")):
                lines += (f"B exitlat mode={mode} prof={prof} hz=4000 idle=500 rounds=20 spin_ms=20 mb=16 "
                          f"median_us={100 + i}.5 p90_us={200 + i}.0 freed_median_us={300 + 10 * i}.0 "
                          f"freed_p90_us={400 + i}.0 late={i}\n")
        info, fig = self.figures(LOG.format(r=1) + lines + "B done\n")
        self.assertAlmostEqual(fig.get("exitlat.exit.none.median_us"), 100.5)
        self.assertAlmostEqual(fig.get("exitlat.exec.rprof-pin.freed_median_us"), 330.0)
        self.assertEqual(fig.get("exitlat.exec.rprof.late"), 2)
        table = bench_report.markdown(fig, {}, info)
        self.assertIn("| | exit latency | exec latency |", table)
        self.assertIn("| rprof, pinning | 104 (203) | 104 (203) |", table)
        # Without the lines, no table.
        info, fig = self.figures(LOG.format(r=1) + "B done\n")
        self.assertNotIn("exit latency", bench_report.markdown(fig, {}, info))

    def test_slowdown_cost_and_ratio(self):
        info, fig = self.figures(LOG.format(r=1) + LOG.format(r=2).split("\n", 2)[2] + "B done\n")
        self.assertEqual(info.get("complete"), "yes")
        self.assertAlmostEqual(fig.get("one.1000hz.floor.slowdown_pct"), 0.1, places=3)
        self.assertAlmostEqual(fig.get("one.1000hz.rprof.slowdown_pct"), 0.3, places=3)
        # (1.003 s - 1.001 s) / (1000 Hz x 1 CPU x 1.003 s) = 1994 ns.
        self.assertAlmostEqual(fig.get("one.1000hz.rprof.cost_above_floor_ns_per_sample"), 2e6 / 1003, places=1)
        self.assertAlmostEqual(fig.get("one.1000hz.perf.cost_above_floor_ns_per_sample"), 1e6 / 1002, places=1)
        self.assertAlmostEqual(fig.get("one.1000hz.ratio_rprof_perf"), (2e6 / 1003) / (1e6 / 1002), places=2)
        self.assertEqual(fig.get("one.1000hz.rprof.rounds"), 2)
        self.assertEqual(fig.get("micro.rprof_ring_push_ns"), 71.0)
        self.assertAlmostEqual(fig.get("micro.ratio_rprof_ring_ftrace"), 71 / 400, places=2)

    def test_chain_figures(self):
        # CPU 0 alone at 1000 Hz: the chainless bench run's drain takes
        # 500 ns a record; with chains of 20 user frames perf -g costs 3 us
        # a sample above the floor, rprof -g 1.5 us, its drain 700 ns a
        # record: 10 ns a frame more.
        log = (
            "B solo prof=none hz=0 copies=1 ns=1000000000 span_ns=1000000000 cpus=1\n"
            "B solo prof=floor hz=1000 copies=1 ns=1001000000 span_ns=1001000000 cpus=1\n"
            "B solo prof=rprof-bench hz=1000 copies=1 ns=1002000000 span_ns=1002000000 reader_cpu_ns=0 cpus=1\n"
            "B stage hz=1000 name=drain_record runs=1000 ns=500000\n"
            "B chain prof=floor hz=1000 depth=14 copies=1 ns=1001000000 span_ns=1001000000 cpus=1\n"
            "B chain prof=perf-g hz=1000 depth=14 copies=1 ns=1004000000 span_ns=1004000000 cpus=1\n"
            "B chain prof=rprof-g hz=1000 depth=14 copies=1 ns=1002500000 span_ns=1002500000 cpus=1 user_frames=20.0\n"
            "B chainstage hz=1000 depth=14 name=drain_record runs=1000 ns=700000\n"
            "B chainstage hz=1000 depth=14 name=handler runs=1000 ns=900000\n"
        )
        _, fig = self.figures(log)
        self.assertAlmostEqual(fig.get("chain.14deep.perf.cost_above_floor_ns_per_sample"), 3e6 / 1004, places=1)
        self.assertAlmostEqual(fig.get("chain.14deep.rprof.cost_above_floor_ns_per_sample"), 1.5e6 / 1002.5, places=1)
        self.assertAlmostEqual(fig.get("chain.14deep.ratio_rprof_perf"), (1.5e6 / 1002.5) / (3e6 / 1004), places=3)
        self.assertAlmostEqual(fig.get("chain.14deep.stage.drain_ns_per_frame"), 10.0, places=3)
        self.assertEqual(fig.get("chain.14deep.stage.handler_ns_each"), 900.0)
        # The chain runs' floor and stages stay out of the chainless figures.
        self.assertEqual(fig.get("solo.1000hz.stage.drain_record_ns_each"), 500.0)
        self.assertAlmostEqual(fig.get("solo.1000hz.floor.cost_ns_per_sample"), 1e6 / 1001, places=1)
        table = bench_report.markdown(fig, {}, {})
        self.assertIn("| 1000 | 14 | 20.0 | 2988 | 1496 | 0.50 | 900 | 700 | 10.0 |", table)

    def test_dwarf_chain_figures(self):
        # The same depth without frame pointers: the floor on that build
        # runs 1002 ms, perf --call-graph dwarf 1012 ms (10 ms above it),
        # rprof's tables 1004 ms (2 ms); rprof's fp walk of the fp build
        # 1.5 ms above its own floor.  1000 Hz on one CPU: about 1000
        # samples each.
        log = (
            "B chain prof=floor hz=1000 depth=14 copies=1 ns=1001000000 span_ns=1001000000 cpus=1\n"
            "B chain prof=rprof-g hz=1000 depth=14 copies=1 ns=1002500000 span_ns=1002500000 cpus=1 "
            "user_frames=20.0 samples=1000 file_bytes=80000\n"
            "B chain prof=floor-nofp hz=1000 depth=14 copies=1 ns=1002000000 span_ns=1002000000 cpus=1\n"
            "B chain prof=perf-dwarf hz=1000 depth=14 copies=1 ns=1012000000 span_ns=1012000000 cpus=1 "
            "samples=1000 file_bytes=8400000\n"
            "B chain prof=rprof-dwarf hz=1000 depth=14 copies=1 ns=1004000000 span_ns=1004000000 cpus=1 "
            "user_frames=21.0 samples=1000 file_bytes=90000\n"
            "B chainstage prof=rprof-dwarf hz=1000 depth=14 name=handler runs=1000 ns=2500000\n"
            "B chainstage hz=1000 depth=14 name=handler runs=1000 ns=900000\n"
        )
        _, fig = self.figures(log)
        g = lambda k: fig.get(f"chain.14deep.{k}")
        self.assertAlmostEqual(g("perf_dwarf.cost_above_floor_ns_per_sample"), 10e6 / 1012, places=1)
        self.assertAlmostEqual(g("rprof_dwarf.cost_above_floor_ns_per_sample"), 2e6 / 1004, places=1)
        self.assertAlmostEqual(g("ratio_rprof_dwarf_perf_dwarf"), (2e6 / 1004) / (10e6 / 1012), places=3)
        self.assertAlmostEqual(g("ratio_rprof_dwarf_rprof_fp"), (2e6 / 1004) / (1.5e6 / 1002.5), places=3)
        # Each mode's stages stay its own.
        self.assertEqual(g("rprof_dwarf.stage.handler_ns_each"), 2500.0)
        self.assertEqual(g("stage.handler_ns_each"), 900.0)
        self.assertEqual(g("perf_dwarf.file_bytes_per_sample"), 8400.0)
        self.assertEqual(g("rprof_dwarf.file_bytes_per_sample"), 90.0)
        self.assertEqual(g("rprof.file_bytes_per_sample"), 80.0)
        table = bench_report.markdown(fig, {}, {})
        self.assertIn("| 1000 | 14 | 21.0 | 9881 | 1992 | 0.20 | 1.33 | 2500 | 8400 | 90 | 80 |", table)

    def test_spreads_and_short_deliveries(self):
        # Round 2's perf run delivers 600 of ~1002 nominal samples and its
        # span is shorter: the spread shows it, the run is short.
        r2 = LOG.format(r=2).split("\n", 2)[2].replace(
            "prof=perf hz=1000 copies=1 ns=1002000000 span_ns=1002000000 reader_cpu_ns=5 cpus=1 samples=1002",
            "prof=perf hz=1000 copies=1 ns=1001500000 span_ns=1001500000 reader_cpu_ns=5 cpus=1 samples=600").replace(
            "cpus=1 samples=1003", "cpus=1 samples=1003 delivered=990")
        info, fig = self.figures(LOG.format(r=1) + r2 + "B done\n")
        self.assertAlmostEqual(fig.get("one.1000hz.perf.cost_above_floor_max"), 1e6 / 1002, places=1)
        self.assertAlmostEqual(fig.get("one.1000hz.perf.cost_above_floor_min"), 0.5e6 / 1001.5, places=1)
        self.assertAlmostEqual(fig.get("one.1000hz.perf.delivered_pct_min"), 100 * 600 / 1001.5, places=2)
        # rprof's delivered count, where the guest gives one, not its taken.
        self.assertAlmostEqual(fig.get("one.1000hz.rprof.delivered_pct_min"), 100 * 990 / 1003, places=2)
        self.assertEqual([k for k, _ in bench_report.short_runs(fig)], ["one.1000hz.perf"])
        table = bench_report.markdown(fig, {}, info)
        self.assertIn("| 749 (499-998) |", table)
        self.assertIn("| 59.9 % / 98.7 % |", table)
        log = write_log(LOG.format(r=1) + r2 + "B done\n")
        out = tempfile.mkdtemp()
        readme = os.path.join(out, "README.md")
        with open(readme, "w") as f:
            f.write("a\n<!-- bench-table:begin -->\nold\n<!-- bench-table:end -->\nb\n")
        try:
            run = subprocess.run([sys.executable, os.path.join(HERE, "bench_report.py"), log,
                                  "--json", os.path.join(out, "b.json"), "--readme", readme],
                                 capture_output=True, text=True)
            self.assertNotEqual(run.returncode, 0)
            self.assertIn("one.1000hz.perf 59.9 %", run.stderr)
            with open(readme) as f:
                self.assertIn("\nold\n", f.read())
        finally:
            os.unlink(log)

    def test_an_unfinished_guest_is_marked_and_the_readme_kept(self):
        log = write_log(LOG.format(r=1))
        out = tempfile.mkdtemp()
        readme = os.path.join(out, "README.md")
        with open(readme, "w") as f:
            f.write("a\n<!-- bench-table:begin -->\nold\n<!-- bench-table:end -->\nb\n")
        try:
            subprocess.run([sys.executable, os.path.join(HERE, "bench_report.py"), log,
                            "--json", os.path.join(out, "b.json"), "--readme", readme],
                           check=True, capture_output=True)
            with open(readme) as f:
                self.assertIn("\nold\n", f.read())
            with open(os.path.join(out, "b.json")) as f:
                self.assertNotIn("guest_complete", json.load(f)["meta"])
            with open(log, "a") as f:
                f.write("B done\n")
            subprocess.run([sys.executable, os.path.join(HERE, "bench_report.py"), log,
                            "--json", os.path.join(out, "b.json"), "--readme", readme],
                           check=True, capture_output=True)
            with open(readme) as f:
                text = f.read()
            self.assertNotIn("\nold\n", text)
            self.assertIn("| one CPU busy | 1000 |", text)
            self.assertTrue(text.startswith("a\n") and text.endswith("\nb\n"))
        finally:
            os.unlink(log)


if __name__ == "__main__":
    unittest.main()
