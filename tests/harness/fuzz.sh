#!/usr/bin/env bash
# `make fuzz`: boots the guest running only the call-sequence fuzzer
# (tests/fuzz, through tests/e2e/80-fuzz.sh) for RPROF_FUZZ_SECONDS
# (default 600) with a random seed (RPROF_FUZZ_SEED chooses one), then
# summarizes the run as `make check` does: the fuzzer's TAP, and any kernel
# report (KASAN, lockdep, WARN, oops) in the console fails it.  On a
# failure it prints the fuzzer's programs that ran last before the first
# kernel report, with the command that replays them.
. "$(dirname "$0")/../../scripts/common.sh"

OUT=$RPROF_BUILD/fuzz
mkdir -p "$OUT"
export RPROF_FUZZ_SECONDS=${RPROF_FUZZ_SECONDS:-600}
export RPROF_FUZZ_SEED=${RPROF_FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
# Boot, the fuzzer's own deadline and the checks after it.
export RPROF_VM_TIMEOUT=${RPROF_VM_TIMEOUT:-$((RPROF_FUZZ_SECONDS + 400))}

"$RPROF_TOP/scripts/kernel.sh" >/dev/null
"$RPROF_TOP/scripts/module.sh" >/dev/null
"$RPROF_TOP/scripts/tools.sh" >/dev/null 2>&1
"$RPROF_TOP/scripts/workloads.sh" build >/dev/null
msg "fuzzing for ${RPROF_FUZZ_SECONDS} s, seed $RPROF_FUZZ_SEED"
"$RPROF_TOP/tests/harness/vm.sh" fuzz "$OUT"

set +e
python3 "$RPROF_TOP/tests/harness/summarize.py" --console "$OUT/console.log" \
	--results "$OUT/results.log" --json "$OUT/fuzz-results.json" |
	grep -v '^FAIL kunit:\|no KUnit suite ran\|^[0-9]* passed, [0-9]* failed'
# The guest runs no KUnit suite in this mode: its absence is no failure.
read -r passed failed < <(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["suites"]
print(sum(v["passed"] for k, v in s.items() if k != "kunit"),
      sum(v["failed"] for k, v in s.items() if k != "kunit"))' "$OUT/fuzz-results.json")
echo "$passed passed, $failed failed"
# The fuzzer writes "rprof-fuzz: -s SEED prog N (...)" to the console
# before each program: the last ones before the first report after the
# fuzzer started are the suspects.
awk '/rprof-fuzz: -s/ { last[++n] = $0; started = 1; next }
	started && /BUG:|WARNING:|KASAN:|Oops|circular locking|general protection|panicked/ {
		printf "first kernel report after the fuzzer started, console.log line %d: %s\n", NR, $0
		for (i = (n > 3 ? n - 2 : 1); i <= n; i++) print "  after " last[i]
		exit
	}' "$OUT/console.log" >&2
[ "$failed" = 0 ] || {
	msg "replay a program in the guest: rprof-fuzz -s SEED -i PROG -n CALLS -v"
	exit 1
}
