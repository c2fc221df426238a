"""Source rules the project holds itself to, checked on every run.

- Every `unsafe` block and `unsafe impl` in the module's Rust carries a
  `// SAFETY:` comment just above it (or on the line before the statement
  that contains it).
- The files that run in NMI context say so at the top and contain none of
  the calls that may sleep, lock or allocate.
"""

import os
import re
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(TOP, "src")

# Code reachable from the perf overflow handler.
NMI_FILES = ["sampling/ring.rs", "sampling/sampler.rs", "sampling/followed.rs", "kapi/task.rs", "kapi/rcu.rs"]
FORBIDDEN_IN_NMI = re.compile(
    r"\.lock\(\)|GFP_KERNEL|KBox::new|KVec::|Vec::new|\.push\(.*GFP|"
    r"mutex|spin_lock|msleep|schedule\(|wait_until|pr_(info|err|warn|debug)!"
)


def rust_files():
    """The module's Rust sources, relative to src/, in every folder."""
    names = []
    for root, _dirs, files in os.walk(SRC):
        for f in files:
            if f.endswith(".rs") and f != "uapi_generated.rs":
                names.append(os.path.relpath(os.path.join(root, f), SRC))
    return sorted(names)


def unsafe_sites(path):
    """(line number, line) of unsafe blocks/impls lacking a SAFETY comment."""
    with open(path) as f:
        lines = f.read().splitlines()
    missing = []
    for i, line in enumerate(lines):
        code = line.split("//")[0]
        if not re.search(r"\bunsafe\s*(\{|impl\b)", code):
            continue
        # Look back over the statement's start and attribute lines for a
        # SAFETY comment, at most 6 lines, stopping at a blank line.
        ok = "SAFETY:" in line
        j = i - 1
        while not ok and j >= 0 and i - j <= 6 and lines[j].strip():
            if "SAFETY:" in lines[j]:
                ok = True
            j -= 1
        if not ok:
            missing.append((i + 1, line.strip()))
    return missing


class SafetyComments(unittest.TestCase):
    def test_every_unsafe_has_a_safety_comment(self):
        problems = []
        for name in rust_files():
            for n, line in unsafe_sites(os.path.join(SRC, name)):
                problems.append(f"src/{name}:{n}: {line}")
        self.assertEqual(problems, [], "unsafe without // SAFETY:\n" + "\n".join(problems))
        # The module lives in subsystem folders: a walk that missed one
        # would pass without looking.
        folders = {os.path.dirname(n) for n in rust_files()}
        self.assertTrue({"", "kapi", "sampling", "resolve", "device"} <= folders, folders)

    def test_checker_catches_a_missing_comment(self):
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".rs", delete=False) as f:
            f.write("fn f() {\n    let x = 1;\n    unsafe { g() };\n}\n")
        try:
            self.assertEqual(len(unsafe_sites(f.name)), 1)
        finally:
            os.unlink(f.name)


class NmiFiles(unittest.TestCase):
    def test_nmi_files_say_so_and_avoid_sleeping_calls(self):
        for name in NMI_FILES:
            with open(os.path.join(SRC, name)) as f:
                text = f.read()
            head = text[:2500]
            self.assertIn("NMI", head, f"src/{name} must say at its top that it runs in NMI context")
            body = "\n".join(
                l.split("//")[0] for l in text.splitlines() if not l.lstrip().startswith("//")
            )
            # Test-only and allocation-at-setup code is marked and allowed.
            body = re.sub(r"#\[cfg\(any\(rprof_kunit, rprof_bench\)\)\][\s\S]*?\n    }\n", "", body)
            body = re.sub(r"pub\(crate\) fn new_ring[\s\S]*?\n}\n", "", body)
            bad = [m.group(0) for m in FORBIDDEN_IN_NMI.finditer(body)]
            self.assertEqual(bad, [], f"src/{name} calls what may sleep, lock or allocate: {bad}")


if __name__ == "__main__":
    unittest.main()
