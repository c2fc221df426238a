#!/usr/bin/env python3
"""Reads the guest's pprof files with Go's own reader, on the host.

    guest_pprof.py RESULTS_LOG OUTDIR

tests/e2e/70-cli.sh sends an `rprof export --format pprof` and a profile
written by the daemon (rprofd) out on the test channel, base64-encoded
between `# RPROF-FILE-BEGIN NAME samples=N` and `# RPROF-FILE-END NAME`
lines (lib.sh's send_file), N being the samples rprof says the file
holds; tests/e2e/47-chains.sh sends the export of a recording with call
chains (and tests/e2e/48-unwind.sh a daemon profile of chains walked by
unwind tables), whose BEGIN line also says `chains=hot>b>a>main,hot>x>main`:
each such chain (leaf first) must be frames of one trace of
`go tool pprof -traces`, in that order.  This script writes each file to OUTDIR, runs `go tool pprof -raw`
on it (the reference reader; the guest has no Go) and checks that it
reads the file and finds the same number of samples.  One line per file,
`ok: ...` or `FAIL: ...`; exit status 1 if any failed or is missing.
"""

import base64
import binascii
import os
import re
import subprocess
import sys

# The files 70-cli.sh sends.
EXPECTED = ("export.pb.gz", "rprofd.pb.gz", "chains.pb.gz", "rprofd-dwarf.pb.gz")

BEGIN = re.compile(r"^# RPROF-FILE-BEGIN (\S+)((?: \w+=\S*)*)\s*$")
RAW_SAMPLE = re.compile(r"^\s+(\d+)(?:\s+\d+)*:(?: \d+)* ?$")


def extract(text):
    """{name: (bytes or None, {key: value})}; None when the block is not
    valid base64 or has no end line."""
    files = {}
    name = None
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        m = BEGIN.match(line)
        if m:
            name, attrs, lines = m.group(1), dict(a.split("=", 1) for a in m.group(2).split()), []
            files[name] = (None, attrs)
            continue
        if name is None:
            continue
        if line == f"# RPROF-FILE-END {name}":
            try:
                files[name] = (base64.b64decode("".join(lines), validate=True), attrs)
            except binascii.Error:
                pass
            name = None
            continue
        lines.append(line[2:] if line.startswith("# ") else line)
    return files


def raw_samples(text):
    """The sum of the first value of each sample in `go tool pprof -raw`
    output, and the number of sample lines."""
    total = count = 0
    in_samples = False
    for line in text.splitlines():
        if line.startswith("Samples:"):
            in_samples = True
            continue
        if in_samples and line and not line[0].isspace() and not line.startswith("samples/"):
            break
        m = RAW_SAMPLE.match(line) if in_samples else None
        if m:
            total += int(m.group(1))
            count += 1
    return total, count


def traces(text):
    """The traces of `go tool pprof -traces` output: for each, its frame
    names, leaf first (label lines such as `comm: x` left out)."""
    out = []
    for block in text.split("-----------+")[1:]:
        frames = []
        for line in block.splitlines():
            words = line.split()
            if not words or words[0].startswith("-") or words[0].endswith(":"):
                continue
            frames.append(words[-1])
        if frames:
            out.append(frames)
    return out


def has_chain(all_traces, chain):
    """Whether `chain` (names, leaf first) is a run of one trace's frames."""
    n = len(chain)
    return any(t[i:i + n] == chain for t in all_traces for i in range(len(t) - n + 1))


def go_pprof(mode, path):
    """(stdout, None) of `go tool pprof MODE -symbolize=none PATH`, or
    (None, why it failed)."""
    try:
        r = subprocess.run(["go", "tool", "pprof", mode, "-symbolize=none", path],
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"cannot run go tool pprof: {e}"
    if r.returncode != 0:
        return None, f"go tool pprof {mode} exited {r.returncode}: {r.stderr.strip()[:300]}"
    return r.stdout, None


def check_chains(path, spec):
    """(ok, message): every chain of `spec` (`a>b>c,d>e`) in -traces."""
    out, err = go_pprof("-traces", path)
    if err:
        return False, err
    found = traces(out)
    missing = [c for c in spec.split(",") if not has_chain(found, c.split(">"))]
    if missing:
        return False, f"go tool pprof -traces has no trace with {', '.join(missing)}"
    return True, f"go tool pprof -traces shows {spec}"


def check_file(path, want):
    """(ok, message) for one file read by `go tool pprof -raw`."""
    out, err = go_pprof("-raw", path)
    if err:
        return False, err
    total, count = raw_samples(out)
    what = f"go tool pprof -raw read {total} samples in {count} stacks"
    if count == 0 or total == 0:
        return False, what
    if total != want:
        return False, f"{what}, rprof said {want}"
    return True, what + ", as rprof said"


def main(log, out):
    try:
        with open(log, errors="replace") as f:
            files = extract(f.read())
    except OSError as e:
        print(f"FAIL: {e}")
        return 1
    os.makedirs(out, exist_ok=True)
    failed = 0
    for name in EXPECTED:
        data, attrs = files.get(name, (None, {}))
        if data is None:
            why = "no block" if name not in files else "a broken block"
            print(f"FAIL: {name}: {why} in {log}")
            failed += 1
            continue
        path = os.path.join(out, name)
        with open(path, "wb") as f:
            f.write(data)
        if not attrs.get("samples", "").isdigit():
            print(f"FAIL: {name}: no samples=N (rprof's own count) on its BEGIN line")
            failed += 1
            continue
        ok, msg = check_file(path, int(attrs["samples"]))
        if ok and "chains" in attrs:
            ok, more = check_chains(path, attrs["chains"])
            msg = f"{msg}; {more}"
        print(f"{'ok' if ok else 'FAIL'}: {path} ({len(data)} bytes): {msg}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
