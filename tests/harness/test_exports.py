"""The pprof export read by the reference reader, `go tool pprof`.

Exports the checked-in fixture (recorded by the module in the guest, see
tests/fixtures/README.md) and checks what Go's pprof makes of it against
the folded export of the same recording: same total, and the workload's
two hot functions in their 3:1 ratio.
"""

import os
import re
import subprocess
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RPROF = os.path.join(TOP, "tools", "target", "release", "rprof")
FIXTURE = os.path.join(TOP, "tests", "fixtures", "attr_main.rprof.data")
SYMFS = os.path.join(TOP, "tests", "fixtures", "symfs")


def export(fmt, out):
    subprocess.run(
        [RPROF, "export", "-i", FIXTURE, "--symfs", SYMFS, "-f", fmt, "-o", out],
        check=True,
        capture_output=True,
    )


class GoPprof(unittest.TestCase):
    def test_go_tool_pprof_reads_the_export(self):
        with tempfile.TemporaryDirectory() as d:
            pb = os.path.join(d, "p.pb.gz")
            folded = os.path.join(d, "p.folded")
            export("pprof", pb)
            export("folded", folded)
            with open(folded) as f:
                folded_total = sum(int(l.rsplit(" ", 1)[1]) for l in f if l.strip())
            top = subprocess.run(
                ["go", "tool", "pprof", "-top", "-sample_index=0", pb],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        m = re.search(r"Total samples = (\d+)", top)
        self.assertIsNotNone(m, top)
        self.assertEqual(int(m.group(1)), folded_total, top)
        flat = {}
        for line in top.splitlines():
            parts = line.split()
            if len(parts) >= 6 and parts[0].isdigit():
                flat[parts[-1]] = int(parts[0])
        self.assertIn("main_hot", flat, top)
        self.assertIn("lib_hot", flat, top)
        ratio = flat["main_hot"] / flat["lib_hot"]
        self.assertTrue(2.25 <= ratio <= 3.75, f"main_hot:lib_hot = {ratio:.2f}\n{top}")


if __name__ == "__main__":
    unittest.main()
