"""Tests of the log summarizer: the harness must fail when it should.

Each trial failure of README.md ("Trial runs that must fail") has a test
here built from the log lines that trial produces, so the harness's
verdict on it is checked on every run, not only when someone tries it.
"""

import contextlib
import glob
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import summarize  # noqa: E402

EXPECTED_FILE = os.path.join(HERE, "expected-suites.txt")
README = os.path.join(os.path.dirname(os.path.dirname(HERE)), "README.md")

KTAP_OK = """\
[    0.500000] kasan: KernelAddressSanitizer initialized
[    0.600000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
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

# KUnit prints an empty run for the built-in suites at boot, then the
# module's run at insmod; kernel messages interleave with both.
KTAP_TWO_SUITES = """\
KTAP version 1
1..0
rprof: /dev/rprof ready (ABI 1, ring_records=4096, buffer_pages=256)
KTAP version 1
1..2
    KTAP version 1
    # Subtest: rprof-ring
    1..1
    ok 1 ring_wraps_around
# rprof-ring: pass:1 fail:0 skip:0 total:1
ok 1 rprof-ring
    KTAP version 1
    # Subtest: rprof-params
    1..2
    ok 1 params_accept_powers_of_two
rprof: ring_records=1000 is invalid: need a power of 2 in [64, 1048576]
    ok 2 params_reject_bad_values
# rprof-params: pass:2 fail:0 skip:0 total:2
ok 2 rprof-params
"""

RESULTS_OK = """\
# RPROF-SUITE device
ok 1 - version ioctl
ok 2 - unknown ioctl
1..2
# RPROF-SUITE-END device rc=0
# RPROF-DONE
"""

# `cargo test --no-fail-fast` with one binary aborting (as under
# RPROF_INJECT=host-abort), the lines that matter.
CARGO_ABORT = """\
     Running unittests src/lib.rs (target/release/deps/rprof_decode-0123456789abcdef)

running 2 tests
test a ... ok
test b ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running tests/inject.rs (target/release/deps/inject-0123456789abcdef)

running 1 test
RPROF_INJECT=host-abort: aborting this test binary
error: test failed, to rerun pass `-p rprof-e2e --test inject`

Caused by:
  process didn't exit successfully: `/w/tools/target/release/deps/inject-0123456789abcdef` (signal: 6, SIGABRT: process abort signal)
     Running unittests src/lib.rs (target/release/deps/rprof_report-0123456789abcdef)

running 1 test
test c ... ok

test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

error: 1 target failed:
    `-p rprof-e2e --test inject`
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
    if "unittest" in logs:
        summarize.parse_unittest(logs["unittest"], s)
    return s.totals(), s


def quiet_main(args):
    """summarize.main without its report on stdout."""
    with contextlib.redirect_stdout(io.StringIO()):
        return summarize.main(args)


def notes(s):
    return "\n".join(n for v in s.suites.values() for n in v.notes)


class KtapTests(unittest.TestCase):
    def test_clean_run_passes(self):
        (p, f, k), s = run(console=KTAP_OK, results=RESULTS_OK)
        self.assertEqual((p, f, k), (2 + 1 + 2 + 1, 0, 0))
        self.assertEqual(s.suites["kunit:rprof-params"].passed, 2)

    def test_boot_run_and_interleaved_messages_pass(self):
        (p, f, _), s = run(console=KTAP_TWO_SUITES)
        self.assertEqual((p, f), (3 + 1, 0), notes(s))

    def test_failed_case_fails(self):
        log = KTAP_OK.replace("    ok 2 params", "    not ok 2 params")
        (p, f, _), _ = run(console=log)
        self.assertEqual(f, 1)

    def test_short_plan_fails(self):
        log = KTAP_OK.replace("    1..2", "    1..3")
        (_, f, _), _ = run(console=log)
        self.assertEqual(f, 1)

    def test_top_level_plan_counts_suites(self):
        # A run announcing 3 suites that reported 1 (the other two never
        # started) was green before the top-level plan was checked.
        log = KTAP_OK.replace("] 1..1", "] 1..3")
        (_, f, _), s = run(console=log)
        self.assertEqual(f, 1)
        self.assertIn("announced 3 suites but 1 reported", notes(s))

    def test_suite_with_no_case_fails(self):
        log = """\
KTAP version 1
1..1
    KTAP version 1
    # Subtest: rprof-empty
    1..0
ok 1 rprof-empty
"""
        (_, f, _), s = run(console=log)
        self.assertEqual(f, 1)
        self.assertIn("ran no test case", notes(s))

    def test_suite_not_ok_without_a_failed_case_fails(self):
        # A suite whose init failed reports `not ok` at the top level.
        log = KTAP_OK.replace("] ok 1 rprof-params", "] not ok 1 rprof-params")
        (_, f, _), s = run(console=log)
        self.assertEqual(f, 1)

    def test_skip_is_counted_apart(self):
        log = KTAP_OK.replace("ok 2 params_reject_bad_values",
                              "ok 2 params_reject_bad_values # SKIP no PMU")
        (p, f, k), s = run(console=log)
        self.assertEqual((f, k), (0, 1))
        self.assertEqual(s.suites["kunit:rprof-params"].skipped, 1)

    def test_not_ok_with_skip_still_fails(self):
        log = KTAP_OK.replace("    ok 2 params_reject_bad_values",
                              "    not ok 2 params_reject_bad_values # SKIP")
        (_, f, k), _ = run(console=log)
        self.assertEqual((f, k), (1, 0))

    def test_crash_mid_suite_fails(self):
        log = "\n".join(KTAP_OK.splitlines()[:9])
        (_, f, _), s = run(console=log)
        self.assertGreaterEqual(f, 1)

    def test_no_suite_fails(self):
        (_, f, _), _ = run(console="[ 0.1] Linux version 6.12\n")
        self.assertEqual(f, 1)

    def test_no_kunit_kernel_needs_no_suite_but_still_fails_an_oops(self):
        # make check-distro: a kernel without KUnit; its console is read
        # for kernel reports only.
        with tempfile.TemporaryDirectory() as d:
            console = os.path.join(d, "console.log")
            with open(console, "w") as f:
                f.write("[ 0.1] Linux version 7.2.13\n")
            self.assertEqual(quiet_main(["--console", console, "--no-kunit"]), 0)
            self.assertNotEqual(quiet_main(["--console", console]), 0)
            with open(console, "a") as f:
                f.write("[ 9.0] Oops: int3: 0000 [#1] SMP NOPTI\n")
            self.assertNotEqual(quiet_main(["--console", console, "--no-kunit"]), 0)

    def test_skip_counts_a_suite_not_run_with_its_reason(self):
        # make check-distro: the KUnit suites and the checkers a
        # distribution's kernel lacks show as skipped, not as nothing.
        with tempfile.TemporaryDirectory() as d:
            console = os.path.join(d, "console.log")
            with open(console, "w") as f:
                f.write("[ 0.1] Linux version 7.2.13\n")
            args = ["--console", console, "--no-kunit",
                    "--skip", "kunit:rprof-ring=no KUnit in this kernel"]
            # A suite skipped whole needs README.md's allowance.
            self.assertNotEqual(quiet_main(args), 0)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = summarize.main(args + ["--allowed-skips", README, "--run", "check-distro"])
            self.assertEqual(rc, 0)
            text = out.getvalue()
            self.assertIn("kunit:rprof-ring: 0 passed, 0 failed, 1 skipped", text)
            self.assertIn("not run: no KUnit in this kernel", text)
            self.assertTrue(text.rstrip().endswith("0 failed, 1 skipped"), text)

    def test_injected_kunit_failure_fails(self):
        # RPROF_INJECT=kunit-fail: one more suite with a failing case.
        log = KTAP_OK.replace("] 1..1", "] 1..2") + """\
    KTAP version 1
    # Subtest: rprof-injected
    1..1
    # injected_failure: EXPECTATION FAILED at src/tests.rs:618
    not ok 1 injected_failure
not ok 2 rprof-injected
"""
        (_, f, _), s = run(console=log)
        self.assertEqual(f, 1)
        self.assertEqual(s.suites["kunit:rprof-injected"].failed, 1)


class KernelLogTests(unittest.TestCase):
    def fails(self, line):
        (_, f, _), s = run(console=KTAP_OK + line + "\n")
        self.assertEqual(s.suites["kernel-log"].failed, 1, line)

    def test_warn_fails(self):
        # RPROF_INJECT=warn.
        self.fails("[    2.0] WARNING: CPU: 0 PID: 1 at src/helpers.c:10 rprof_init")

    def test_sleep_in_atomic_fails(self):
        self.fails("[ 2.0] BUG: sleeping function called from invalid context at mm/slub.c:1")

    def test_lockdep_fails(self):
        self.fails("[ 2.0] WARNING: possible circular locking dependency detected")

    def test_hung_task_fails(self):
        # kernel/hung_task.c
        self.fails("[ 40.0] INFO: task rprof:77 blocked for more than 30 seconds.")

    def test_soft_lockup_fails(self):
        # kernel/watchdog.c
        self.fails("[ 30.0] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [kworker/1:1:30]")

    def test_workqueue_lockup_fails(self):
        # kernel/workqueue.c, printed without a trailing newline
        self.fails("[ 50.0] BUG: workqueue lockup - pool cpus=1 node=0 flags=0x0 nice=0 stuck for 31s!")

    def test_rcu_stall_fails(self):
        self.fails("[ 60.0] rcu: INFO: rcu_preempt self-detected stall on CPU")

    def test_boot_banner_is_not_an_error(self):
        log = KTAP_OK + "[ 0.1] rcu: \tRCU lockdep checking is enabled.\n"
        (_, f, _), _ = run(console=log)
        self.assertEqual(f, 0)

    def test_slow_nmi_handler_is_not_an_error(self):
        log = KTAP_OK + "INFO: NMI handler (rprof_test_nmi [rprof]) took too long to run: 7.653 msecs\n"
        (_, f, _), _ = run(console=log)
        self.assertEqual(f, 0)


class BootTests(unittest.TestCase):
    def boot(self, text, required):
        s = summarize.Summary()
        summarize.parse_boot(text, s, required)
        return s.suites.get("kernel-boot")

    def test_both_lines_present(self):
        v = self.boot(KTAP_OK, ["kasan", "lockdep"])
        self.assertEqual((v.passed, v.failed), (2, 0))

    def test_missing_kasan_fails(self):
        text = KTAP_OK.replace("KernelAddressSanitizer initialized", "")
        v = self.boot(text, ["kasan", "lockdep"])
        self.assertEqual(v.failed, 1)
        self.assertIn("without kasan", v.notes[0])

    def test_tag_based_kasan_is_not_generic(self):
        text = KTAP_OK.replace("initialized", "initialized (sw-tags, stacktrace=on)")
        self.assertEqual(self.boot(text, ["kasan"]).failed, 1)

    def test_missing_lockdep_fails(self):
        text = KTAP_OK.replace("Lock dependency validator", "Lock validator")
        self.assertEqual(self.boot(text, ["lockdep"]).failed, 1)

    def test_nothing_required(self):
        self.assertIsNone(self.boot("", []))


class TapTests(unittest.TestCase):
    def test_not_ok_fails(self):
        (p, f, _), _ = run(results=RESULTS_OK.replace("ok 2", "not ok 2"))
        self.assertEqual((p, f), (2, 1))

    def test_missing_done_marker_fails(self):
        (_, f, _), s = run(results=RESULTS_OK.replace("# RPROF-DONE\n", ""))
        self.assertEqual(s.suites["guest"].failed, 1)

    def test_script_exit_status_fails(self):
        (_, f, _), _ = run(results=RESULTS_OK.replace("rc=0", "rc=2"))
        self.assertEqual(f, 1)

    def test_plan_mismatch_fails(self):
        (_, f, _), _ = run(results=RESULTS_OK.replace("1..2", "1..5"))
        self.assertEqual(f, 1)

    def test_plan_first_passes(self):
        text = RESULTS_OK.replace("1..2\n", "").replace("device\n", "device\n1..2\n", 1)
        (p, f, _), s = run(results=text)
        self.assertEqual((p, f), (3, 0), notes(s))

    def test_planned_script_stopping_early_fails(self):
        text = "# RPROF-SUITE x\n1..3\nok 1 - a\n# RPROF-SUITE-END x rc=0\n# RPROF-DONE\n"
        (_, f, _), _ = run(results=text)
        self.assertEqual(f, 1)

    def test_second_plan_fails(self):
        text = "# RPROF-SUITE x\n1..1\nok 1 - a\n1..1\n# RPROF-SUITE-END x rc=0\n# RPROF-DONE\n"
        (_, f, _), _ = run(results=text)
        self.assertEqual(f, 1)

    def test_no_results_fails(self):
        # done_testing used to print `1..0` for a script that ran nothing.
        text = "# RPROF-SUITE x\n1..0\n# RPROF-SUITE-END x rc=0\n# RPROF-DONE\n"
        (_, f, _), s = run(results=text)
        self.assertEqual(f, 1)
        self.assertIn("no results", notes(s))

    def test_skip_is_counted_apart(self):
        text = ("# RPROF-SUITE hp\nok 1 - # SKIP cpu1 cannot go offline here\n1..1\n"
                "# RPROF-SUITE-END hp rc=0\n# RPROF-DONE\n")
        (p, f, k), s = run(results=text)
        self.assertEqual((p, f, k), (1, 0, 1))
        self.assertEqual(s.suites["e2e:hp"].results, 1)

    def test_whole_script_skip(self):
        text = "# RPROF-SUITE hp\n1..0 # SKIP no cpu1\n# RPROF-SUITE-END hp rc=0\n# RPROF-DONE\n"
        (p, f, k), _ = run(results=text)
        self.assertEqual((p, f, k), (1, 0, 1))

    def test_uncounted_ok_fails(self):
        # The old skip path of 50-hotplug: an `ok 1` echoed by hand, then
        # a test counted by lib.sh numbered 1 again.
        text = ("# RPROF-SUITE hp\nok 1 - # SKIP by hand\nok 1 - counted\n1..1\n"
                "# RPROF-SUITE-END hp rc=0\n# RPROF-DONE\n")
        (_, f, _), s = run(results=text)
        self.assertGreaterEqual(f, 1)
        self.assertIn("out of sequence", notes(s))

    def test_bail_out_fails(self):
        text = RESULTS_OK.replace("1..2\n", "Bail out! no module\n")
        (_, f, _), _ = run(results=text)
        self.assertGreaterEqual(f, 1)

    def test_unfinished_script_fails(self):
        text = "# RPROF-SUITE device\nok 1 - a\n"
        (_, f, _), _ = run(results=text)
        self.assertEqual(f, 2)  # the script and the missing end marker


class CargoTests(unittest.TestCase):
    def test_counts(self):
        log = (
            "     Running unittests src/lib.rs (target/debug/deps/rprof_decode-0123456789abcdef)\n"
            "test result: ok. 7 passed; 0 failed; 2 ignored; 0 measured\n"
            "     Running tests/x.rs (target/debug/deps/x-0123456789abcdef)\n"
            "test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured\n"
        )
        (p, f, k), s = run(cargo=log)
        self.assertEqual((p, f, k), (8, 2, 2))
        self.assertIn("cargo:lib:rprof_decode", s.suites)
        self.assertIn("cargo:test:x", s.suites)

    def test_names_follow_cargo_targets(self):
        log = (
            "     Running unittests src/lib.rs (target/release/deps/rprof-15399ed62b93e1cc)\n"
            "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured\n"
            "     Running unittests src/main.rs (target/release/deps/rprof-87180668f3b48b42)\n"
            "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured\n"
            "     Running unittests src/bin/rprofd.rs (target/release/deps/rprofd-c80d639fb70c5f6b)\n"
            "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured\n"
            "   Doc-tests rprof_abi\n"
            "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured\n"
        )
        _, s = run(cargo=log)
        self.assertEqual(sorted(s.shown()), ["cargo:bin:rprof", "cargo:bin:rprofd",
                                             "cargo:doc:rprof_abi", "cargo:lib:rprof"])

    def test_no_result_fails(self):
        (_, f, _), _ = run(cargo="error: could not compile\n")
        self.assertEqual(f, 1)

    def test_aborting_binary_fails_and_is_named(self):
        # RPROF_INJECT=host-abort.
        (p, f, _), s = run(cargo=CARGO_ABORT)
        self.assertEqual((p, f), (3, 1))
        v = s.suites["cargo:test:inject"]
        self.assertEqual(v.failed, 1)
        self.assertTrue(any("SIGABRT" in n for n in v.notes), v.notes)

    def test_binary_dying_last_fails(self):
        # Without --no-fail-fast cargo stops at the binary that died.
        log = CARGO_ABORT.split("     Running unittests src/lib.rs (target/release/deps/rprof_report")[0]
        (_, f, _), s = run(cargo=log)
        self.assertEqual(s.suites["cargo:test:inject"].failed, 1)

    def test_binary_exiting_zero_without_result_fails(self):
        # std::process::exit(0) in a test: cargo itself sees success.
        log = ("     Running tests/exits.rs (target/debug/deps/exits-29b4a46050b7d6bb)\n\n"
               "running 1 test\n"
               "   Doc-tests a\n\nrunning 0 tests\n\n"
               "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured\n")
        (_, f, _), s = run(cargo=log)
        self.assertEqual(s.suites["cargo:test:exits"].failed, 1)

    def test_failed_tests_are_not_counted_twice(self):
        log = ("     Running unittests src/lib.rs (target/debug/deps/a-3110576fc3c3c96d)\n"
               "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured\n\n"
               "error: test failed, to rerun pass `-p a --lib`\n\n"
               "Caused by:\n"
               "  process didn't exit successfully: `/w/target/debug/deps/a-3110576fc3c3c96d` (exit status: 101)\n")
        (p, f, _), s = run(cargo=log)
        self.assertEqual((p, f), (1, 1))


# A test binary that hung, killed by tests/harness/timeout.sh (cargo's
# target runner), as a run with a temporary sleep-forever test gave it.
CARGO_TIMEOUT = """\
     Running tests/hang.rs (target/release/deps/hang-980bcf3af54e4851)

running 1 test
test sleeps_forever has been running for over 60 seconds
RPROF-TIMEOUT: /w/tools/target/release/deps/hang-980bcf3af54e4851 ran longer than 90 s (RPROF_HOST_TEST_TIMEOUT); killed
error: test failed, to rerun pass `-p rprof-e2e --test hang`

Caused by:
  process didn't exit successfully: `/w/tests/harness/timeout.sh /w/tools/target/release/deps/hang-980bcf3af54e4851` (exit status: 124)
note: test exited abnormally; to see the full output pass --no-capture to the harness.
     Running tests/inject.rs (target/release/deps/inject-7f9795d18375f694)

running 1 test
test injected ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
"""


class TimeoutTests(unittest.TestCase):
    """A hung host test fails by name instead of stalling the run."""

    def run_limited(self, limit, *cmd):
        env = dict(os.environ, RPROF_HOST_TEST_TIMEOUT=str(limit))
        t0 = time.monotonic()
        p = subprocess.run([os.path.join(HERE, "timeout.sh"), *cmd], env=env,
                           capture_output=True, text=True, timeout=60)
        return p, time.monotonic() - t0

    def test_hung_command_is_killed_and_named(self):
        p, took = self.run_limited(1, "sleep", "30")
        self.assertEqual(p.returncode, 124, p.stderr)
        self.assertLess(took, 15)
        self.assertIn("RPROF-TIMEOUT: sleep 30 ran longer than 1 s", p.stderr)

    def test_status_passes_through(self):
        p, _ = self.run_limited(30, "sh", "-c", "exit 3")
        self.assertEqual(p.returncode, 3)
        self.assertNotIn("RPROF-TIMEOUT", p.stderr)

    def test_host_steps_run_under_it(self):
        with open(os.path.join(HERE, "steps.sh")) as f:
            steps = f.read()
        cargo = steps.split("cargo_tests() (")[1].split("\n)")[0]
        python = steps.split("python_tests() (")[1].split("\n)")[0]
        self.assertRegex(cargo, r"runner = \['[^']*/timeout\.sh'\]")
        self.assertIn("./timeout.sh python3", python)

    def test_timed_out_binary_fails_and_is_named(self):
        (p, f, _), s = run(cargo=CARGO_TIMEOUT)
        self.assertEqual((p, f), (1, 1))
        v = s.suites["cargo:test:hang"]
        self.assertEqual(v.failed, 1)
        self.assertIn("killed after 90 s: RPROF_HOST_TEST_TIMEOUT", "\n".join(v.notes))
        self.assertIn("rerun: cargo test -p rprof-e2e --test hang", "\n".join(v.notes))

    def test_timed_out_unittest_run_fails_and_says_so(self):
        log = ("test_a (m.T.test_a) ... ok\n"
               "RPROF-TIMEOUT: python3 -m unittest discover -v -p test_*.py ran longer than"
               " 600 s (RPROF_HOST_TEST_TIMEOUT); killed\n")
        (_, f, _), s = run(unittest=log)
        self.assertEqual(f, 1)
        self.assertIn("ran longer than 600 s", notes(s))


class UnittestTests(unittest.TestCase):
    def test_ok(self):
        (p, f, k), _ = run(unittest="...\nRan 3 tests in 0.1s\n\nOK (skipped=1)\n")
        self.assertEqual((p, f, k), (2, 0, 1))

    def test_failures_and_errors(self):
        (p, f, _), _ = run(unittest="Ran 5 tests in 0.1s\n\nFAILED (failures=1, errors=2)\n")
        self.assertEqual((p, f), (2, 3))

    def test_crashed_runner_fails(self):
        (_, f, _), _ = run(unittest="test_a (m.T.test_a) ... Segmentation fault\n")
        self.assertEqual(f, 1)


class ExpectedTests(unittest.TestCase):
    def check(self, expected, kinds, **logs):
        _, s = run(**logs)
        summarize.check_expected(s, expected, kinds)
        return s.totals(), s

    def test_listed_suites_present(self):
        (_, f, _), s = self.check(["kunit:rprof-params", "e2e:device"], ["kunit", "e2e"],
                                  console=KTAP_OK, results=RESULTS_OK)
        self.assertEqual(f, 0, notes(s))

    def test_missing_suite_fails(self):
        (_, f, _), s = self.check(["e2e:device", "e2e:70-cli"], ["e2e"], results=RESULTS_OK)
        self.assertEqual(f, 1)
        self.assertEqual(s.suites["e2e:70-cli"].failed, 1)

    def test_unlisted_suite_fails(self):
        (_, f, _), s = self.check(["e2e:other"], ["e2e"], results=RESULTS_OK)
        self.assertEqual(s.suites["e2e:device"].failed, 1)
        self.assertIn("not in tests/harness/expected-suites.txt", notes(s))

    def test_listed_binary_without_tests_fails(self):
        log = ("   Doc-tests rprof_abi\n\nrunning 0 tests\n\n"
               "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured\n")
        (_, f, _), s = self.check(["cargo:doc:rprof_abi"], ["cargo"], cargo=log)
        self.assertEqual(f, 1)
        self.assertIn("ran no test", notes(s))

    def test_unlisted_binary_without_tests_is_quiet(self):
        log = ("   Doc-tests rprof\n\nrunning 0 tests\n\n"
               "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured\n"
               "   Doc-tests rprof_abi\n\n"
               "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured\n")
        (_, f, _), s = self.check(["cargo:doc:rprof_abi"], ["cargo"], cargo=log)
        self.assertEqual(f, 0)
        self.assertNotIn("cargo:doc:rprof", s.shown())

    def test_a_kind_not_run_is_one_failure(self):
        (_, f, _), s = self.check(["kunit:a", "kunit:b", "kunit:c"], ["kunit"],
                                  console="[ 0.1] Linux version 6.12\n")
        self.assertEqual(f, 2)  # no suite ran; none of the three expected

    def test_kinds_without_a_log_are_not_checked(self):
        (_, f, _), _ = self.check(["kunit:a", "e2e:device"], ["e2e"], results=RESULTS_OK)
        self.assertEqual(f, 0)


class SkipOnlyTests(unittest.TestCase):
    """A suite whose every test was skipped tested nothing: it fails unless
    README.md's list of allowed skips names it for the run."""

    SKIPPED_SCRIPT = ("# RPROF-SUITE device\n1..0 # SKIP no device here\n"
                      "# RPROF-SUITE-END device rc=0\n# RPROF-DONE\n")

    def main(self, results, *args):
        with tempfile.TemporaryDirectory() as d:
            r = os.path.join(d, "results.log")
            e = os.path.join(d, "expected.txt")
            with open(r, "w") as f:
                f.write(results)
            with open(e, "w") as f:
                f.write("e2e:device\n")
            return quiet_main(["--results", r, "--expected", e, *args])

    def test_listed_script_skipped_whole_fails(self):
        # `1..0 # SKIP` passed make check before.
        self.assertEqual(self.main(RESULTS_OK), 0)
        self.assertEqual(self.main(self.SKIPPED_SCRIPT), 1)

    def test_listed_script_skipping_every_test_fails(self):
        text = RESULTS_OK.replace("ok 1 - version ioctl", "ok 1 - # SKIP a").replace(
            "ok 2 - unknown ioctl", "ok 2 - # SKIP b")
        self.assertEqual(self.main(text), 1)
        (_, _, k), s = run(results=text)
        summarize.check_skips(s, [])
        self.assertEqual((k, s.suites["e2e:device"].failed), (2, 1))
        self.assertIn("all 2 of its tests skipped", notes(s))

    def test_one_test_run_is_enough(self):
        text = RESULTS_OK.replace("ok 2 - unknown ioctl", "ok 2 - # SKIP b")
        self.assertEqual(self.main(text), 0)

    def test_cargo_binary_with_every_test_ignored_fails(self):
        log = ("     Running tests/x.rs (target/release/deps/x-0123456789abcdef)\n"
               "test result: ok. 0 passed; 0 failed; 3 ignored; 0 measured\n")
        _, s = run(cargo=log)
        summarize.check_skips(s, [])
        self.assertEqual(s.suites["cargo:test:x"].failed, 1)

    def test_a_suite_the_list_names_passes(self):
        with tempfile.TemporaryDirectory() as d:
            readme = os.path.join(d, "README.md")
            with open(readme, "w") as f:
                f.write("x\n%s\n- `make check`: `e2e:dev*`, `kunit:a`: no device\n"
                        "  in this guest.\n%s\n" % (summarize.ALLOWED_BEGIN,
                                                      summarize.ALLOWED_END))
            self.assertEqual(self.main(self.SKIPPED_SCRIPT, "--allowed-skips", readme,
                                       "--run", "check"), 0)
            # For another run only.
            self.assertEqual(self.main(self.SKIPPED_SCRIPT, "--allowed-skips", readme,
                                       "--run", "check-distro"), 1)

    def test_a_bad_list_fails(self):
        for block in ("- make check: `e2e:device`: why\n", "e2e:device\n"):
            text = summarize.ALLOWED_BEGIN + "\n" + block + summarize.ALLOWED_END
            with self.assertRaises(ValueError, msg=block):
                summarize.read_allowed_skips(text, "check")
        with self.assertRaises(ValueError):
            summarize.read_allowed_skips("no list here", "check")

    def test_readme_allows_what_check_distro_skips_and_nothing_in_check(self):
        # check-distro.sh skips every KUnit suite of the expected list and
        # the two checkers Debian's kernel lacks.
        with open(README) as f:
            text = f.read()
        names = [n for n in summarize.read_expected(EXPECTED_FILE) if n.startswith("kunit:")]
        names += ["checker:kasan", "checker:lockdep"]
        distro = summarize.read_allowed_skips(text, "check-distro")
        for n in names:
            s = summarize.Summary()
            s.result(n, "skip", "not run")
            summarize.check_skips(s, distro)
            self.assertEqual(s.suites[n].failed, 0, n)
        for run_name in ("check", "host-test"):
            self.assertEqual(summarize.read_allowed_skips(text, run_name), [], run_name)


class ExpectedFileTests(unittest.TestCase):
    """The list in the tree matches what the tree has."""

    def setUp(self):
        self.names = summarize.read_expected(EXPECTED_FILE)

    def test_every_e2e_script_is_listed_and_vice_versa(self):
        top = os.path.dirname(os.path.dirname(HERE))
        scripts = sorted("e2e:" + os.path.basename(p)[:-3]
                         for p in glob.glob(os.path.join(top, "tests", "e2e", "[0-9]*.sh")))
        listed = sorted(n for n in self.names if n.startswith("e2e:"))
        self.assertEqual(scripts, listed)

    def test_names_have_a_known_kind(self):
        for n in self.names:
            self.assertIn(n.split(":", 1)[0], summarize.LISTED_KINDS, n)
        self.assertEqual(len(self.names), len(set(self.names)), "a name is listed twice")


class MainTests(unittest.TestCase):
    def test_json_and_exit_status(self):
        with tempfile.TemporaryDirectory() as d:
            c = os.path.join(d, "console.log")
            r = os.path.join(d, "results.log")
            j = os.path.join(d, "out.json")
            with open(c, "w") as f:
                f.write(KTAP_OK)
            with open(r, "w") as f:
                f.write(RESULTS_OK)
            self.assertEqual(quiet_main(["--console", c, "--results", r, "--json", j]), 0)
            with open(j) as f:
                data = json.load(f)
            self.assertEqual(data["failed"], 0)
            self.assertEqual(data["suites"]["e2e:device"], {"passed": 2, "failed": 0, "skipped": 0})
            with open(c, "a") as f:
                f.write("[ 3.0] BUG: kernel NULL pointer dereference\n")
            self.assertEqual(quiet_main(["--console", c, "--results", r, "--json", j]), 1)

    def test_missing_log_fails(self):
        self.assertEqual(quiet_main(["--console", "/nonexistent/console.log"]), 1)

    def test_failed_step_fails(self):
        # A test runner's crash (cargo's status) or QEMU's timeout.
        with tempfile.TemporaryDirectory() as d:
            r = os.path.join(d, "results.log")
            with open(r, "w") as f:
                f.write(RESULTS_OK)
            self.assertEqual(quiet_main(["--results", r, "--step", "vm=0"]), 0)
            self.assertEqual(quiet_main(["--results", r, "--step", "vm=124"]), 1)
            self.assertEqual(quiet_main(["--results", r, "--step", "host-cargo=101"]), 1)

    def test_last_line(self):
        # CI greps the `N passed, N failed` prefix.
        with tempfile.TemporaryDirectory() as d:
            r = os.path.join(d, "results.log")
            with open(r, "w") as f:
                f.write(RESULTS_OK.replace("ok 2 - unknown ioctl", "ok 2 - # SKIP no ioctl"))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                summarize.main(["--results", r])
            self.assertEqual(out.getvalue().splitlines()[-1], "2 passed, 0 failed, 1 skipped")

    def test_timeout_is_named(self):
        self.assertEqual(summarize.describe_status("124"), "exit status 124 (timed out)")
        self.assertIn("signal 9", summarize.describe_status("137"))


if __name__ == "__main__":
    unittest.main()
