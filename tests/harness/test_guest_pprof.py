"""Tests of guest_pprof.py, the host's reading of the guest's pprof files."""

import base64
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import guest_pprof  # noqa: E402

TOP = os.path.dirname(os.path.dirname(HERE))
RPROF = os.path.join(TOP, "tools", "target", "release", "rprof")
FIXTURE = os.path.join(TOP, "tests", "fixtures", "attr_main.rprof.data")

RAW = """\
PeriodType: cpu nanoseconds
Period: 1001001
Samples:
samples/count cpu/nanoseconds
       1734 1735735734: 1 2 3 
                comm:[swapper/1]
          7    7007007: 10 2 11 
Locations
     1: 0xffffffff81000000 M=1 
"""


def block(name, data, attrs="", broken=False):
    lines = base64.encodebytes(data).decode().splitlines()
    if broken:
        lines[0] = "!" + lines[0][1:]
    body = "".join(f"# {l}\n" for l in lines)
    return f"# RPROF-FILE-BEGIN {name}{attrs}\n{body}# RPROF-FILE-END {name}\n"


class ExtractTests(unittest.TestCase):
    def test_blocks_and_attributes(self):
        text = "ok 1 - a\n" + block("a.pb.gz", b"\x1f\x8b" * 100, " samples=7") + "ok 2 - b\n"
        files = guest_pprof.extract(text)
        self.assertEqual(files["a.pb.gz"], (b"\x1f\x8b" * 100, {"samples": "7"}))

    def test_broken_or_unfinished_block_has_no_data(self):
        files = guest_pprof.extract(block("a", b"xyz" * 40, broken=True)
                                    + "# RPROF-FILE-BEGIN b\n# eHl6\n")
        self.assertIsNone(files["a"][0])
        self.assertIsNone(files["b"][0])

    def test_raw_samples(self):
        self.assertEqual(guest_pprof.raw_samples(RAW), (1741, 2))


@unittest.skipUnless(os.path.exists(RPROF) and shutil.which("go"),
                     "needs tools/target/release/rprof (cargo test --release) and go")
class GoTests(unittest.TestCase):
    def run_main(self, text):
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "results.log")
            with open(log, "w") as f:
                f.write(text)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = guest_pprof.main(log, os.path.join(d, "out"))
            return rc, out.getvalue()

    def setUp(self):
        with tempfile.TemporaryDirectory() as d:
            pb = os.path.join(d, "p.pb.gz")
            r = subprocess.run([RPROF, "export", "-i", FIXTURE, "-f", "pprof", "-o", pb],
                               check=True, capture_output=True, text=True)
            self.samples = int(r.stderr.split("exported ")[1].split()[0])
            with open(pb, "rb") as f:
                self.pb = f.read()

    def test_export_is_read_with_its_count(self):
        n = f" samples={self.samples}"
        rc, out = self.run_main(block("export.pb.gz", self.pb, n) + block("rprofd.pb.gz", self.pb, n)
                                + block("chains.pb.gz", self.pb, n) + block("rprofd-dwarf.pb.gz", self.pb, n))
        self.assertEqual(rc, 0, out)

    def test_chains_are_looked_up_in_the_traces(self):
        # The fixture has no chains: its traces are [address, dso, comm].
        n = f" samples={self.samples}"
        ok = n + " chains=handle_softirqs>[kernel.kallsyms]>attr_main,default_idle>[kernel.kallsyms]"
        rc, out = self.run_main(block("export.pb.gz", self.pb, n) + block("rprofd.pb.gz", self.pb, n)
                                + block("chains.pb.gz", self.pb, ok) + block("rprofd-dwarf.pb.gz", self.pb, ok))
        self.assertEqual(rc, 0, out)
        bad = n + " chains=default_idle>nobody"
        rc, out = self.run_main(block("export.pb.gz", self.pb, n) + block("rprofd.pb.gz", self.pb, n)
                                + block("chains.pb.gz", self.pb, bad) + block("rprofd-dwarf.pb.gz", self.pb, ok))
        self.assertEqual(rc, 1, out)
        self.assertIn("no trace with default_idle>nobody", out)

    def test_wrong_count_fails(self):
        text = (block("export.pb.gz", self.pb, f" samples={self.samples}")
                + block("rprofd.pb.gz", self.pb, f" samples={self.samples + 1}"))
        rc, out = self.run_main(text)
        self.assertEqual(rc, 1)
        self.assertIn(f"rprof said {self.samples + 1}", out)

    def test_truncated_file_fails(self):
        n = f" samples={self.samples}"
        text = block("export.pb.gz", self.pb[: len(self.pb) // 2], n) + block("rprofd.pb.gz", self.pb, n)
        rc, out = self.run_main(text)
        self.assertEqual(rc, 1)
        self.assertIn("FAIL: ", out)

    def test_missing_file_or_count_fails(self):
        rc, out = self.run_main(block("export.pb.gz", self.pb, f" samples={self.samples}")
                                + block("rprofd.pb.gz", self.pb)
                                + block("chains.pb.gz", self.pb, f" samples={self.samples}"))
        self.assertEqual(rc, 1)
        self.assertIn("no samples=N", out)
        rc, out = self.run_main("")
        self.assertIn("export.pb.gz: no block", out)


if __name__ == "__main__":
    unittest.main()
