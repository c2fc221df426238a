#!/usr/bin/env python3
"""Turns the logs of one `make check` run into pass/fail/skip counts.

Inputs (any may be repeated):
  --cargo LOG      output of `cargo test --no-fail-fast` (one suite per
                   test binary)
  --unittest LOG   output of `python3 -m unittest -v`
  --console LOG    the guest's kernel console (KUnit KTAP + kernel messages)
  --results LOG    the guest's test channel (TAP of the end-to-end scripts)
  --step NAME=RC   the exit status of a step (build, test runner, QEMU)
  --expected FILE  the suites that must run (tests/harness/expected-suites.txt)
  --require-boot WHAT
                   a console start-up line that must be there: kasan or
                   lockdep (the checkers the run claims to have had)
  --no-kunit       the guest's kernel has no KUnit (make check-distro): the
                   console is read for kernel reports only
  --skip NAME=WHY  a suite that cannot run on this kernel (make
                   check-distro: the KUnit suites, the checkers), counted
                   as one skipped test with its reason, so that what was
                   not tested shows in the summary
  --allowed-skips FILE --run RUN
                   the list of allowed skips in FILE (README.md, between
                   its allowed-skips markers): the suites `make RUN` may
                   skip whole

Every test that ran counts once, as passed, failed or skipped.  Besides
the tests themselves, these count as failures:
- a step that exited non-zero (a crashed cargo or unittest run, QEMU
  timing out or dying);
- a cargo test binary that printed no result line (it died: abort, signal,
  stack overflow, process::exit, or ran past RPROF_HOST_TEST_TIMEOUT and
  was killed by tests/harness/timeout.sh);
- a KTAP or TAP plan that does not match the results, at either level of
  KTAP (KUnit's top-level plan counts suites), results out of sequence, a
  missing end marker (the guest died or timed out), a script that exited
  non-zero;
- a suite of the expected list that did not run or ran no test, and a
  suite that ran but is not on the list;
- a suite whose every test was skipped (`1..0 # SKIP`, each result
  `# SKIP`, each cargo test ignored, a --skip), unless the list of
  allowed skips names it for this run;
- any kernel WARN, BUG, oops, lockdep, KASAN, hung-task, soft-lockup or
  workqueue-lockup report in the console, and a missing KASAN or lockdep
  start-up line when --require-boot asks for it.

Prints one line per suite and ends with `N passed, N failed, N skipped`;
writes the JSON summary given by --json.  Exit status 0 only if nothing
failed and something passed.
"""

import argparse
import fnmatch
import json
import re
import sys

# Kernel log lines that fail a run whatever the tests said.
KERNEL_ERRORS = re.compile(
    r"WARNING:|BUG:|Oops|Kernel panic|general protection fault|"
    r"possible recursive locking|circular locking|inconsistent lock state|"
    r"suspicious RCU usage|bad unlock balance|held lock freed|"
    r"sleeping function called from invalid context|"
    r"KASAN:|UBSAN:|list_add corruption|list_del corruption|refcount_t:|"
    r"Call Trace:|stack-protector|Unable to handle|"
    # The lockup detectors of tests/kernel/rprof.config: hung task
    # ("INFO: task X:N blocked for more than 30 seconds."), soft lockup
    # ("watchdog: BUG: soft lockup - CPU#0 stuck for 22s!"), workqueue
    # watchdog ("BUG: workqueue lockup - pool ..."), and RCU stalls.
    r"blocked for more than|soft lockup|hard LOCKUP|workqueue lockup|"
    r"rcu_\w+ (?:self-)?detected stall"
)

# Start-up lines that prove the kernel runs a checker (6.12, x86_64).
BOOT_LINES = {
    # arch/x86/mm/kasan_init_64.c, generic mode (the tag modes add a
    # parenthesis).
    "kasan": re.compile(r"KernelAddressSanitizer initialized\s*$"),
    # kernel/locking/lockdep.c, lockdep_info(), printed by PROVE_LOCKING.
    "lockdep": re.compile(r"Lock dependency validator: "),
}

TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")
TAP_RESULT = re.compile(r"^(\s*)(not ok|ok)\s+(\d+)\b\s*(?:-\s*)?(.*)$")
TAP_PLAN = re.compile(r"^(\s*)1\.\.(\d+)\s*(#.*)?$")
KTAP_HEADER = re.compile(r"^(\s*)(?:KTAP version \d+|TAP version \d+)\s*$")
SUBTEST = re.compile(r"^(\s*)# Subtest: (\S+)")
SKIP = re.compile(r"#\s*skip\b", re.I)

# Suites named in the expected list carry one of these prefixes.
LISTED_KINDS = ("cargo", "python", "kunit", "e2e")


class Suite:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped = 0
        # Test results proper; failures the harness adds (a bad plan, a
        # dead binary) are in `failed` but not here.
        self.results = 0
        self.notes = []


class Summary:
    def __init__(self):
        self.suites = {}

    def suite(self, name):
        return self.suites.setdefault(name, Suite())

    def result(self, name, outcome, note=None):
        """One test result: outcome is "pass", "fail" or "skip"."""
        s = self.suite(name)
        s.results += 1
        if outcome == "pass":
            s.passed += 1
        elif outcome == "skip":
            s.skipped += 1
        else:
            s.failed += 1
        if note:
            s.notes.append(note)

    def fail(self, name, note):
        """A failure found by the harness rather than reported by a test."""
        s = self.suite(name)
        s.failed += 1
        s.notes.append(note)

    def check(self, name, good, note):
        """A harness check of its own: one pass, or one failure with note."""
        if good:
            self.suite(name).passed += 1
        else:
            self.fail(name, note)

    def add(self, name, passed, failed, notes=()):
        """Counts of results at once (cargo's and unittest's summaries)."""
        s = self.suite(name)
        s.passed += passed
        s.failed += failed
        s.results += passed + failed
        s.notes.extend(notes)

    def shown(self):
        """Suites worth a line: those that counted something."""
        return {k: v for k, v in sorted(self.suites.items())
                if v.passed or v.failed or v.skipped or v.notes}

    def totals(self):
        v = self.shown().values()
        return (sum(s.passed for s in v), sum(s.failed for s in v),
                sum(s.skipped for s in v))

    def to_json(self):
        p, f, k = self.totals()
        return {
            "passed": p,
            "failed": f,
            "skipped": k,
            "suites": {
                name: {"passed": s.passed, "failed": s.failed, "skipped": s.skipped}
                for name, s in self.shown().items()
            },
        }


def tap_outcome(ok, rest):
    """A TAP result's outcome: `ok ... # SKIP` is a skip, `not ok` fails
    whatever its directive says."""
    if not ok:
        return "fail"
    return "skip" if SKIP.search(rest) else "pass"


# Cargo's "Running" header names a target by its source and its binary:
#   Running unittests src/lib.rs (target/release/deps/rprof_abi-0123456789abcdef)
#   Running tests/cli.rs (target/release/deps/cli-0123456789abcdef)
# The suite is cargo:KIND:NAME, KIND as in cargo's own `--lib`, `--bin X`,
# `--test X` and `--doc`, so that the rerun hint of a failure names the
# same suite.
CARGO_RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+)(?: \((.*)\))?\s*$")
CARGO_DOC = re.compile(r"^\s*Doc-tests (\S+)")
CARGO_RESULT = re.compile(r"^test result: (\w+)\. (\d+) passed; (\d+) failed; (\d+) ignored")
CARGO_DIED = re.compile(r"process didn't exit successfully: `([^`]*)` \((.*)\)")
CARGO_RERUN = re.compile(r"`((?:-p \S+ )?--(?:lib|bins?|test|doc)\b[^`]*)`")
# tests/harness/timeout.sh, which runs each test binary: the binary ran
# past RPROF_HOST_TEST_TIMEOUT and was killed.
TIMEOUT = re.compile(r"^RPROF-TIMEOUT: .* ran longer than (\d+) s")


def cargo_kind(source):
    if source.endswith("src/lib.rs"):
        return "lib"
    if source.startswith("src/main.rs") or source.startswith("src/bin/") or "/src/bin/" in source:
        return "bin"
    if source.startswith("benches/"):
        return "bench"
    if source.startswith("examples/"):
        return "example"
    return "test"


def cargo_stem(path):
    """target/release/deps/rprof_abi-0123456789abcdef -> rprof_abi"""
    return re.sub(r"-[0-9a-f]{16}$", "", path.strip().split("/")[-1].split(" ")[0])


def cargo_suite_from_rerun(args):
    """`-p rprof-e2e --test inject` -> cargo:test:inject"""
    m = re.search(r"--(test|bin|example|bench) (\S+)", args)
    if m:
        return f"cargo:{m.group(1)}:{m.group(2).replace('-', '_')}"
    pkg = re.search(r"-p (\S+)", args)
    crate = pkg.group(1).replace("-", "_") if pkg else "?"
    if "--doc" in args:
        return f"cargo:doc:{crate}"
    return f"cargo:lib:{crate}"


def parse_cargo(text, summary):
    """`cargo test --no-fail-fast`: one header per test binary, then its
    output, then its `test result` line.  A binary that dies (abort,
    signal, stack overflow, process::exit) prints no result line; cargo
    names it in "process didn't exit successfully" and in the rerun hint
    of its "error:" lines."""
    current = None  # suite name of the binary running
    has_result = False
    why = None  # what cargo said about the running binary's exit
    rerun = None
    by_path = {}  # binary path stem -> suite name
    ran = 0

    def finish():
        if current is None or has_result:
            return
        note = "died before its 'test result' line"
        note += f" ({why})" if why else " (exited early, cargo saw no error)"
        if rerun:
            note += f"; rerun: cargo test {rerun}"
        summary.fail(current, note)

    for line in text.splitlines():
        m = CARGO_RUNNING.match(line)
        d = CARGO_DOC.match(line)
        if m or d:
            finish()
            if m:
                path = m.group(2) or m.group(1)
                stem = cargo_stem(path)
                name = f"cargo:{cargo_kind(m.group(1) if m.group(2) else '')}:{stem}"
            else:
                stem = None
                name = "cargo:doc:" + d.group(1).replace("-", "_")
            # Two integration tests of different crates may share a name.
            base, n = name, 2
            while name in summary.suites and summary.suites[name].results:
                name, n = f"{base}#{n}", n + 1
            if stem:
                by_path[stem] = name
            summary.suite(name)
            current, has_result, why, rerun = name, False, None, None
            ran += 1
            continue
        m = CARGO_RESULT.match(line)
        if m and current is not None:
            has_result = True
            s = summary.suite(current)
            passed, failed, ignored = int(m.group(2)), int(m.group(3)), int(m.group(4))
            s.passed += passed
            s.failed += failed
            s.skipped += ignored
            s.results += passed + failed + ignored
            continue
        m = re.match(r"^test (\S+) \.\.\. FAILED$", line)
        if m and current is not None:
            summary.suite(current).notes.append("FAILED " + m.group(1))
            continue
        m = TIMEOUT.match(line)
        if m and current is not None:
            why = f"killed after {m.group(1)} s: RPROF_HOST_TEST_TIMEOUT"
            summary.suite(current).notes.append(line.strip())
            continue
        m = CARGO_DIED.search(line)
        if m:
            name = by_path.get(cargo_stem(m.group(1)))
            if name == current and not has_result:
                why = why or m.group(2)
            elif name is not None and "exit status: 101" not in m.group(2):
                # After its result line: a crash in teardown.
                summary.fail(name, f"exited with {m.group(2)} after its result line")
            continue
        if line.startswith("error:"):
            m = CARGO_RERUN.search(line)
            if m and current is not None and not has_result:
                rerun = m.group(1)
    finish()
    if ran == 0:
        summary.fail("cargo", "no test binary ran (see the cargo log: a build error?)")


def parse_unittest(text, summary, name="python:harness"):
    """`python3 -m unittest -v`: its closing lines count everything."""
    ran = re.search(r"^Ran (\d+) tests?", text, re.M)
    timeout = re.search(TIMEOUT.pattern + ".*", text, re.M)
    if timeout:
        summary.fail(name, timeout.group(0))
    if not ran:
        if not timeout:
            summary.fail(name, "python unittest did not report (it died or did not start)")
        return
    total = int(ran.group(1))
    counts = {}
    m = re.search(r"^(?:FAILED|OK) \((.*)\)\s*$", text, re.M)
    if m:
        for part in m.group(1).split(","):
            k, _, v = part.strip().partition("=")
            counts[k] = int(v)
    failed = counts.get("failures", 0) + counts.get("errors", 0) + counts.get("unexpected successes", 0)
    skipped = counts.get("skipped", 0)
    if not re.search(r"^(?:OK|FAILED)\b", text, re.M):
        summary.fail(name, "no OK or FAILED line after 'Ran'")
    s = summary.suite(name)
    s.passed += total - failed - skipped
    s.failed += failed
    s.skipped += skipped
    s.results += total


def strip_ts(line):
    return TIMESTAMP.sub("", line.rstrip("\r\n"))


def parse_ktap(text, summary):
    """KUnit's KTAP on the console.  Each `KTAP version 1` at the top level
    starts a run whose plan (`1..N`) counts suites; each suite is a
    subtest (`# Subtest: NAME`, its own plan, one line per case) closed by
    a top-level result line.  Kernel messages may interleave."""
    top = None  # {"plan": N or None, "count": results at the top level}
    suite = None
    indent = plan = None
    results = 0
    nsuites = 0

    def close_top():
        if top is not None and top["plan"] != top["count"]:
            summary.fail("kunit", f"KTAP announced {top['plan']} suites but {top['count']} reported"
                         " (a suite crashed or never ran)")

    def close_suite(line_ok, rest):
        if plan is None or plan != results:
            summary.fail(suite, f"plan {plan} but {results} results (crashed or short run)")
        elif results == 0:
            summary.fail(suite, "ran no test case")
        s = summary.suites[suite]
        if line_ok is False and s.failed == 0:
            summary.fail(suite, "suite reported 'not ok' " + rest)

    for raw in text.splitlines():
        line = strip_ts(raw)
        m = KTAP_HEADER.match(line)
        if m and not m.group(1):
            if suite is not None:
                summary.fail(suite, "suite never finished (crash or timeout)")
                suite = None
            close_top()
            top = {"plan": None, "count": 0}
            continue
        m = SUBTEST.match(line)
        if m and m.group(1):
            if suite is not None:
                summary.fail(suite, "suite never finished (another began)")
            suite, indent, plan, results = "kunit:" + m.group(2), m.group(1), None, 0
            summary.suite(suite)
            nsuites += 1
            continue
        m = TAP_PLAN.match(line)
        if m:
            if not m.group(1) and top is not None and top["plan"] is None and suite is None:
                top["plan"] = int(m.group(2))
            elif suite is not None and m.group(1) == indent and plan is None:
                plan = int(m.group(2))
            continue
        m = TAP_RESULT.match(line)
        if not m:
            continue
        if not m.group(1):
            # A top-level result: one suite's verdict.
            if top is not None:
                top["count"] += 1
            if suite is not None:
                close_suite(m.group(2) == "ok", m.group(4))
                suite = None
            continue
        if suite is not None and m.group(1) == indent:
            results += 1
            if int(m.group(3)) != results:
                summary.fail(suite, f"case number {m.group(3)} out of sequence (expected {results})")
            outcome = tap_outcome(m.group(2) == "ok", m.group(4))
            summary.result(suite, outcome, None if outcome == "pass" else f"{m.group(2)}: {m.group(4)}")
    if suite is not None:
        summary.fail(suite, "suite never finished (crash or timeout)")
    close_top()
    if nsuites == 0:
        summary.fail("kunit", "no KUnit suite ran")


def parse_kernel_log(text, summary):
    bad = [strip_ts(l) for l in text.splitlines() if KERNEL_ERRORS.search(l)]
    summary.check("kernel-log", not bad, bad[0] if bad else "")
    summary.suite("kernel-log").notes.extend(bad[1:20])


def parse_boot(text, summary, required):
    """The console must show each checker's start-up line."""
    lines = [strip_ts(l) for l in text.splitlines()]
    for what in required:
        pat = BOOT_LINES[what]
        summary.check("kernel-boot", any(pat.search(l) for l in lines),
                      f"no '{pat.pattern}' line: the guest kernel ran without {what}")


def parse_results(text, summary):
    """The guest's test channel: '# RPROF-SUITE name' ... TAP ...
    '# RPROF-SUITE-END name rc=N', then '# RPROF-DONE'.  The plan may come
    first or last; `1..0 # SKIP why` skips a whole script."""
    suite = None
    plan = None
    count = 0
    skip_all = False
    done = False
    for raw in text.splitlines():
        line = raw.rstrip("\r\n")
        m = re.match(r"# RPROF-SUITE (\S+)\s*$", line)
        if m:
            if suite is not None:
                summary.fail(suite, "script never finished (another began)")
            suite, plan, count, skip_all = "e2e:" + m.group(1), None, 0, False
            summary.suite(suite)
            continue
        m = re.match(r"# RPROF-SUITE-END (\S+) rc=(\d+)", line)
        if m and suite:
            if skip_all:
                if count:
                    summary.fail(suite, f"plan '1..0 # SKIP' but {count} results")
            elif count == 0:
                summary.fail(suite, "no results: the script ran no test")
            elif plan is None or plan != count:
                summary.fail(suite, f"plan {plan} but {count} results")
            if int(m.group(2)) != 0:
                summary.fail(suite, f"script exited with {m.group(2)}")
            suite = None
            continue
        if line.startswith("# RPROF-DONE"):
            done = True
            continue
        if suite is None:
            continue
        if line.startswith("Bail out!"):
            summary.fail(suite, line)
            continue
        m = TAP_PLAN.match(line)
        if m and not m.group(1):
            if plan is not None:
                summary.fail(suite, f"a second plan 1..{m.group(2)} after 1..{plan}")
                continue
            plan = int(m.group(2))
            if plan == 0 and m.group(3) and SKIP.search(m.group(3)):
                skip_all = True
                summary.result(suite, "skip", "skipped: " + m.group(3).lstrip("# "))
            continue
        m = TAP_RESULT.match(line)
        if m and not m.group(1):
            count += 1
            if int(m.group(3)) != count:
                summary.fail(suite, f"test number {m.group(3)} out of sequence (expected {count})")
            outcome = tap_outcome(m.group(2) == "ok", m.group(4))
            summary.result(suite, outcome, None if outcome == "pass" else f"{m.group(2)}: {m.group(4)}")
    if suite is not None:
        summary.fail(suite, "script never finished (crash or timeout)")
    summary.check("guest", done, "the guest did not reach its end marker")


def read_expected(path):
    """The expected-suites file: one suite a line, `#` starts a comment."""
    names = []
    with open(path) as f:
        for line in f:
            name = line.split("#", 1)[0].strip()
            if name:
                names.append(name)
    return names


def check_expected(summary, expected, kinds):
    """Fails each expected suite of the given kinds that did not run or ran
    no test, and each suite of those kinds that ran but is not listed."""
    listed = set(expected)
    for kind in kinds:
        want = [n for n in expected if n.split(":", 1)[0] == kind]
        ran = [n for n in summary.suites if n.startswith(kind + ":")]
        if want and not ran:
            # One line, not one per suite: the whole kind is missing.
            summary.fail(kind, f"none of the {len(want)} expected {kind} suites ran")
            continue
        for name in want:
            s = summary.suites.get(name)
            if s is None:
                summary.fail(name, "expected (tests/harness/expected-suites.txt) but did not run")
            elif s.results == 0 and s.failed == 0:
                summary.fail(name, "ran no test")
        for name in ran:
            s = summary.suites[name]
            if name not in listed and (s.results or s.failed):
                summary.fail(name, "ran but is not in tests/harness/expected-suites.txt (add a line)")


# README.md's list of allowed skips sits between these two lines; each
# entry is `- `make RUN`: `PATTERN`, `PATTERN`: why`, PATTERN a suite name
# with shell wildcards, continued on indented lines.
ALLOWED_BEGIN = "<!-- allowed-skips:begin -->"
ALLOWED_END = "<!-- allowed-skips:end -->"
ALLOWED_ENTRY = re.compile(r"^- `make ([\w-]+)`: ((?:`[^`]+`, )*`[^`]+`): \S")


def read_allowed_skips(text, run):
    """The suite patterns that the list of allowed skips in `text` (the
    README) lets `make RUN` skip whole.  Raises ValueError when the list
    is missing or has a line that is not an entry: a typo must not go
    unnoticed."""
    if text.count(ALLOWED_BEGIN) != 1 or text.count(ALLOWED_END) != 1:
        raise ValueError(f"no single '{ALLOWED_BEGIN}' ... '{ALLOWED_END}' block")
    block = text.split(ALLOWED_BEGIN)[1].split(ALLOWED_END)[0]
    entries = []
    for line in block.splitlines():
        if not line.strip():
            continue
        if line.startswith("- "):
            entries.append(line.strip())
        elif line[0].isspace() and entries:
            entries[-1] += " " + line.strip()
        else:
            raise ValueError(f"not an entry of the list: {line!r}")
    patterns = []
    for e in entries:
        m = ALLOWED_ENTRY.match(e)
        if not m:
            raise ValueError(f"not '- `make RUN`: `SUITE`, ...: why': {e!r}")
        if m.group(1) == run:
            patterns += re.findall(r"`([^`]+)`", m.group(2))
    return patterns


def check_skips(summary, allowed):
    """Fails each suite that reported results, every one of them a skip,
    unless a pattern of `allowed` names it: a suite reduced to skips (its
    plan `1..0 # SKIP`, a requirement it always lacks) tests nothing."""
    for name, s in list(summary.suites.items()):
        if s.results and s.skipped == s.results and s.failed == 0 and \
                not any(fnmatch.fnmatchcase(name, p) for p in allowed):
            summary.fail(name, f"all {s.results} of its tests skipped, and README.md's"
                         " list of allowed skips does not name it for this run")


def describe_status(rc):
    if rc == "124":
        return "exit status 124 (timed out)"
    if rc.isdigit() and int(rc) > 128:
        return f"exit status {rc} (killed by signal {int(rc) - 128})"
    return f"exit status {rc}"


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cargo", action="append", default=[])
    ap.add_argument("--unittest", action="append", default=[])
    ap.add_argument("--console", action="append", default=[])
    ap.add_argument("--results", action="append", default=[])
    ap.add_argument("--step", action="append", default=[],
                    help="NAME=RC of a step; non-zero fails it")
    ap.add_argument("--expected", help="file listing the suites that must run")
    ap.add_argument("--require-boot", action="append", default=[], choices=sorted(BOOT_LINES))
    ap.add_argument("--no-kunit", action="store_true")
    ap.add_argument("--skip", action="append", default=[],
                    help="NAME=WHY: a suite not run on this kernel, and why")
    ap.add_argument("--allowed-skips", metavar="FILE",
                    help="README.md: its list of the suites a run may skip whole")
    ap.add_argument("--run", help="the run (check, check-distro, ...) for --allowed-skips")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    if bool(args.allowed_skips) != bool(args.run):
        ap.error("--allowed-skips and --run go together")

    s = Summary()
    for step in args.step:
        name, _, rc = step.partition("=")
        s.check("step:" + name, rc == "0", describe_status(rc))
    for skip in args.skip:
        name, _, why = skip.partition("=")
        s.result(name, "skip", "not run: " + why)
    kinds = []
    for kind, paths, parsers in (
        ("cargo", args.cargo, [parse_cargo]),
        ("python", args.unittest, [parse_unittest]),
        ("kunit" if not args.no_kunit else "console", args.console,
         ([] if args.no_kunit else [parse_ktap])
         + [parse_kernel_log, lambda t, s: parse_boot(t, s, args.require_boot)]),
        ("e2e", args.results, [parse_results]),
    ):
        for p in paths:
            text = read(p)
            if text is None:
                s.fail(kind, f"missing log {p}")
                continue
            for fn in parsers:
                fn(text, s)
        if paths:
            kinds.append(kind)
    if args.expected:
        try:
            expected = read_expected(args.expected)
        except OSError as e:
            s.fail("expected", f"cannot read {args.expected}: {e}")
        else:
            check_expected(s, expected, kinds)
    allowed = []
    if args.allowed_skips:
        try:
            allowed = read_allowed_skips(read(args.allowed_skips) or "", args.run)
        except ValueError as e:
            s.fail("allowed-skips", f"{args.allowed_skips}: {e}")
    check_skips(s, allowed)

    for name, v in s.shown().items():
        status = "ok" if v.failed == 0 else "FAIL"
        line = f"{status:4} {name}: {v.passed} passed, {v.failed} failed"
        if v.skipped:
            line += f", {v.skipped} skipped"
        print(line)
        for n in v.notes:
            print(f"       {n}")
    p, f, k = s.totals()
    if args.json:
        with open(args.json, "w") as out:
            json.dump(s.to_json(), out, indent=1)
            out.write("\n")
    print(f"{p} passed, {f} failed, {k} skipped")
    return 0 if f == 0 and p > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
