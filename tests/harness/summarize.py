#!/usr/bin/env python3
"""Turns the logs of one `make check` run into pass/fail counts.

Inputs (any may be repeated):
  --cargo LOG      output of `cargo test` (one suite per crate binary)
  --unittest LOG   output of `python3 -m unittest -v`
  --console LOG    the guest's kernel console (KUnit KTAP + kernel messages)
  --results LOG    the guest's test channel (TAP of the end-to-end scripts)

Every test that ran counts once.  Besides the tests themselves, these count
as failures: a KTAP or TAP plan that does not match the results (a short or
crashed run), a missing end marker (the guest died or timed out), a script
that exited non-zero, and any kernel WARN, BUG, oops, lockdep, KASAN or
"sleeping function called from invalid context" line in the console.

Prints one line per suite and ends with `N passed, N failed`; writes the
JSON summary given by --json.  Exit status 0 only if nothing failed.
"""

import argparse
import json
import re
import sys

# Kernel log lines that fail a run whatever the tests said.
KERNEL_ERRORS = re.compile(
    r"WARNING:|BUG:|Oops|Kernel panic|general protection fault|"
    r"possible recursive locking|circular locking|inconsistent lock state|"
    r"suspicious RCU usage|bad unlock balance|held lock freed|"
    r"INFO: task .* blocked|sleeping function called from invalid context|"
    r"KASAN:|UBSAN:|list_add corruption|list_del corruption|refcount_t:|"
    r"Call Trace:|stack-protector|Unable to handle"
)
TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]\s?")
TAP_RESULT = re.compile(r"^(\s*)(not ok|ok)\s+(\d+)\b\s*(?:-\s*)?(.*)$")
TAP_PLAN = re.compile(r"^(\s*)1\.\.(\d+)")
SUBTEST = re.compile(r"^(\s*)# Subtest: (\S+)")


class Summary:
    def __init__(self):
        self.suites = {}

    def add(self, suite, passed, failed, notes=()):
        s = self.suites.setdefault(suite, {"passed": 0, "failed": 0, "notes": []})
        s["passed"] += passed
        s["failed"] += failed
        s["notes"].extend(notes)

    def totals(self):
        p = sum(s["passed"] for s in self.suites.values())
        f = sum(s["failed"] for s in self.suites.values())
        return p, f

    def to_json(self):
        p, f = self.totals()
        return {
            "passed": p,
            "failed": f,
            "suites": {
                k: {"passed": v["passed"], "failed": v["failed"]}
                for k, v in sorted(self.suites.items())
            },
        }


def parse_cargo(text, summary):
    """`cargo test`: one 'Running' or 'Doc-tests' header per test binary."""
    name = "cargo"
    seen = False
    for line in text.splitlines():
        m = re.match(r"\s*Running (?:unittests )?(\S+)(?: \((.*)\))?", line)
        if m:
            name = "host:" + re.sub(r"-[0-9a-f]{16}$", "", m.group(2).split("/")[-1] if m.group(2) else m.group(1))
            continue
        m = re.match(r"\s*Doc-tests (\S+)", line)
        if m:
            name = "host:doc-" + m.group(1)
            continue
        m = re.match(r"test result: (\w+)\. (\d+) passed; (\d+) failed", line)
        if m:
            seen = True
            passed, failed = int(m.group(2)), int(m.group(3))
            if passed or failed:
                summary.add(name, passed, failed)
    if not seen:
        summary.add("host:cargo", 0, 1, ["no 'test result' line: cargo test did not run"])


def parse_unittest(text, summary, name="host:harness"):
    ran = re.search(r"^Ran (\d+) tests?", text, re.M)
    if not ran:
        summary.add(name, 0, 1, ["python unittest did not report"])
        return
    total = int(ran.group(1))
    failed = 0
    m = re.search(r"^FAILED \((.*)\)", text, re.M)
    if m:
        for part in m.group(1).split(","):
            k, _, v = part.strip().partition("=")
            if k in ("failures", "errors"):
                failed += int(v)
    summary.add(name, total - failed, failed)


def strip_ts(line):
    return TIMESTAMP.sub("", line.rstrip("\r\n"))


def parse_ktap(text, summary):
    """KUnit's KTAP on the console: suites are subtests of the top level."""
    lines = [strip_ts(l) for l in text.splitlines()]
    suite = None
    indent = None
    plan = None
    results = 0
    nsuites = 0
    for line in lines:
        m = SUBTEST.match(line)
        if m and m.group(1):
            suite, indent, plan, results = "kunit:" + m.group(2), m.group(1), None, 0
            nsuites += 1
            continue
        if suite is None:
            continue
        m = TAP_PLAN.match(line)
        if m and m.group(1) == indent and plan is None:
            plan = int(m.group(2))
            continue
        m = TAP_RESULT.match(line)
        if not m:
            continue
        if m.group(1) == indent:
            results += 1
            ok = m.group(2) == "ok"
            skip = "# SKIP" in m.group(4)
            summary.add(suite, 1 if ok or skip else 0, 0 if ok or skip else 1,
                        [] if ok else ["not ok: " + m.group(4)])
        elif len(m.group(1)) < len(indent):
            # The suite's own result line closes it.
            if plan is None or plan != results:
                summary.add(suite, 0, 1, [f"plan {plan} but {results} results (crashed or short run)"])
            suite = None
    if suite is not None:
        summary.add(suite, 0, 1, ["suite never finished (crash or timeout)"])
    if nsuites == 0:
        summary.add("kunit", 0, 1, ["no KUnit suite ran"])


def parse_kernel_log(text, summary):
    bad = [strip_ts(l) for l in text.splitlines() if KERNEL_ERRORS.search(l)]
    if bad:
        summary.add("kernel-log", 0, 1, bad[:20])
    else:
        summary.add("kernel-log", 1, 0)


def parse_results(text, summary):
    """The guest's test channel: '# RPROF-SUITE name' ... TAP ...
    '# RPROF-SUITE-END name rc=N', then '# RPROF-DONE'."""
    suite = None
    plan = None
    count = 0
    done = False
    for raw in text.splitlines():
        line = raw.rstrip("\r\n")
        m = re.match(r"# RPROF-SUITE (\S+)", line)
        if m:
            suite, plan, count = "e2e:" + m.group(1), None, 0
            summary.add(suite, 0, 0)
            continue
        m = re.match(r"# RPROF-SUITE-END (\S+) rc=(\d+)", line)
        if m and suite:
            if plan is None or plan != count:
                summary.add(suite, 0, 1, [f"plan {plan} but {count} results"])
            if int(m.group(2)) != 0:
                summary.add(suite, 0, 1, [f"script exited with {m.group(2)}"])
            suite = None
            continue
        if line.startswith("# RPROF-DONE"):
            done = True
            continue
        if suite is None:
            continue
        m = TAP_PLAN.match(line)
        if m and not m.group(1):
            plan = int(m.group(2))
            continue
        m = TAP_RESULT.match(line)
        if m and not m.group(1):
            count += 1
            ok = m.group(2) == "ok"
            summary.add(suite, 1 if ok else 0, 0 if ok else 1, [] if ok else ["not ok: " + m.group(4)])
    if suite is not None:
        summary.add(suite, 0, 1, ["script never finished (crash or timeout)"])
    summary.add("guest", 1 if done else 0, 0 if done else 1,
                [] if done else ["the guest did not reach its end marker"])


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
                    help="NAME=RC of a build step; non-zero fails it")
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    s = Summary()
    for step in args.step:
        name, _, rc = step.partition("=")
        ok = rc == "0"
        s.add("build:" + name, 1 if ok else 0, 0 if ok else 1, [] if ok else [f"exit status {rc}"])
    for kind, paths, fn in (
        ("cargo", args.cargo, parse_cargo),
        ("unittest", args.unittest, parse_unittest),
        ("console", args.console, None),
        ("results", args.results, parse_results),
    ):
        for p in paths:
            text = read(p)
            if text is None:
                s.add(kind, 0, 1, [f"missing log {p}"])
                continue
            if kind == "console":
                parse_ktap(text, s)
                parse_kernel_log(text, s)
            else:
                fn(text, s)

    for name, v in sorted(s.suites.items()):
        status = "ok" if v["failed"] == 0 else "FAIL"
        print(f"{status:4} {name}: {v['passed']} passed, {v['failed']} failed")
        for n in v["notes"]:
            print(f"       {n}")
    p, f = s.totals()
    if args.json:
        with open(args.json, "w") as out:
            json.dump(s.to_json(), out, indent=1)
            out.write("\n")
    print(f"{p} passed, {f} failed")
    return 0 if f == 0 and p > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
