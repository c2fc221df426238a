"""Tests of the log summarizer: the harness must fail when it should."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import summarize  # noqa: E402

KTAP_OK = """\
[    1.000000] KTAP version 1
[    1.000001] 1..1
[    1.000002]     KTAP version 1
[    1.000003]     # Subtest: rprof-params
[    1.000004]     # module: rprof
[    1.000005]     1..2
[    1.000006]     ok 1 params_accept_powers_of_two
[    1.000007]     ok 2 params_reject_bad_values
[    1.000008] # rprof-params: pass:2 fail:0 skip:0 total:2
[    1.000009] ok 1 rprof-params
"""

RESULTS_OK = """\
# RPROF-SUITE device
ok 1 - version ioctl
ok 2 - unknown ioctl
1..2
# RPROF-SUITE-END device rc=0
# RPROF-DONE
"""


def run(**logs):
    s = summarize.Summary()
    if "console" in logs:
        summarize.parse_ktap(logs["console"], s)
        summarize.parse_kernel_log(logs["console"], s)
    if "results" in logs:
        summarize.parse_results(logs["results"], s)
    if "cargo" in logs:
        summarize.parse_cargo(logs["cargo"], s)
    return s.totals(), s


class KtapTests(unittest.TestCase):
    def test_clean_run_passes(self):
        (p, f), s = run(console=KTAP_OK, results=RESULTS_OK)
        self.assertEqual((p, f), (2 + 1 + 2 + 1, 0))
        self.assertEqual(s.suites["kunit:rprof-params"]["passed"], 2)

    def test_failed_case_fails(self):
        log = KTAP_OK.replace("    ok 2 params", "    not ok 2 params")
        (p, f), _ = run(console=log)
        self.assertEqual(f, 1)

    def test_short_plan_fails(self):
        log = KTAP_OK.replace("1..2", "1..3")
        (_, f), _ = run(console=log)
        self.assertEqual(f, 1)

    def test_crash_mid_suite_fails(self):
        log = "\n".join(KTAP_OK.splitlines()[:7])
        (_, f), s = run(console=log)
        self.assertGreaterEqual(f, 1)

    def test_no_suite_fails(self):
        (_, f), _ = run(console="[ 0.1] Linux version 6.12\n")
        self.assertEqual(f, 1)

    def test_warn_fails(self):
        log = KTAP_OK + "[    2.0] WARNING: CPU: 0 PID: 1 at src/helpers.c:10 rprof_init\n"
        (_, f), s = run(console=log)
        self.assertEqual(f, 1)
        self.assertEqual(s.suites["kernel-log"]["failed"], 1)

    def test_sleep_in_atomic_fails(self):
        log = KTAP_OK + "[ 2.0] BUG: sleeping function called from invalid context at mm/slub.c:1\n"
        (_, f), _ = run(console=log)
        self.assertEqual(f, 1)

    def test_boot_banner_is_not_an_error(self):
        log = KTAP_OK + "[ 0.1] rcu: \tRCU lockdep checking is enabled.\n"
        (_, f), _ = run(console=log)
        self.assertEqual(f, 0)

    def test_lockdep_fails(self):
        log = KTAP_OK + "[ 2.0] WARNING: possible circular locking dependency detected\n"
        (_, f), _ = run(console=log)
        self.assertEqual(f, 1)


class TapTests(unittest.TestCase):
    def test_not_ok_fails(self):
        (p, f), _ = run(results=RESULTS_OK.replace("ok 2", "not ok 2"))
        self.assertEqual((p, f), (2, 1))

    def test_missing_done_marker_fails(self):
        (_, f), s = run(results=RESULTS_OK.replace("# RPROF-DONE\n", ""))
        self.assertEqual(s.suites["guest"]["failed"], 1)

    def test_script_exit_status_fails(self):
        (_, f), _ = run(results=RESULTS_OK.replace("rc=0", "rc=2"))
        self.assertEqual(f, 1)

    def test_plan_mismatch_fails(self):
        (_, f), _ = run(results=RESULTS_OK.replace("1..2", "1..5"))
        self.assertEqual(f, 1)

    def test_unfinished_script_fails(self):
        text = "# RPROF-SUITE device\nok 1 - a\n"
        (_, f), _ = run(results=text)
        self.assertEqual(f, 2)  # the script and the missing end marker


class CargoTests(unittest.TestCase):
    def test_counts(self):
        log = (
            "     Running unittests src/lib.rs (target/debug/deps/rprof_decode-0123456789abcdef)\n"
            "test result: ok. 7 passed; 0 failed; 0 ignored\n"
            "     Running tests/x.rs (target/debug/deps/x-0123456789abcdef)\n"
            "test result: FAILED. 1 passed; 2 failed; 0 ignored\n"
        )
        (p, f), s = run(cargo=log)
        self.assertEqual((p, f), (8, 2))
        self.assertIn("host:rprof_decode", s.suites)

    def test_no_result_fails(self):
        (_, f), _ = run(cargo="error: could not compile\n")
        self.assertEqual(f, 1)


class MainTests(unittest.TestCase):
    def test_json_and_exit_status(self):
        with tempfile.TemporaryDirectory() as d:
            c = os.path.join(d, "console.log")
            r = os.path.join(d, "results.log")
            j = os.path.join(d, "out.json")
            open(c, "w").write(KTAP_OK)
            open(r, "w").write(RESULTS_OK)
            self.assertEqual(summarize.main(["--console", c, "--results", r, "--json", j]), 0)
            import json
            data = json.load(open(j))
            self.assertEqual(data["failed"], 0)
            self.assertEqual(data["suites"]["e2e:device"], {"passed": 2, "failed": 0})
            open(c, "a").write("[ 3.0] BUG: kernel NULL pointer dereference\n")
            self.assertEqual(summarize.main(["--console", c, "--results", r, "--json", j]), 1)

    def test_missing_log_fails(self):
        self.assertEqual(summarize.main(["--console", "/nonexistent/console.log"]), 1)


if __name__ == "__main__":
    unittest.main()
