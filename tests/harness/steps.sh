# shellcheck shell=bash
# Steps of rprof's test runs, shared by check.sh (`make check`) and host.sh
# (`make host-test`).  Source it after scripts/common.sh with OUT set.
#
# Every step's exit status reaches the summary (--step NAME=RC), so a test
# runner that crashes, or QEMU timing out, fails the run even when its log
# looks complete.

steps=()

# step NAME CMD...: runs CMD, logging to $OUT/NAME.log, and records its
# exit status for the summary.  Returns that status.
step() {
	local name=$1 rc=0
	shift
	msg "$name"
	"$@" >"$OUT/$name.log" 2>&1 || rc=$?
	steps+=(--step "$name=$rc")
	if [ $rc -ne 0 ]; then
		tail -n 30 "$OUT/$name.log" >&2
		msg "$name failed (exit $rc); log: $OUT/$name.log"
	fi
	return $rc
}

# The userspace workspace, the ring model and the harness's own tests.
# --no-fail-fast: a test binary that dies does not stop the ones after it
# (cargo still exits non-zero, and names it).  Each test binary (and each
# doctest) runs under timeout.sh, cargo's target runner: one that hangs
# is killed after RPROF_HOST_TEST_TIMEOUT seconds (600) and fails by name.
cargo_tests() (
	cd "$RPROF_TOP/tools" && cargo test --workspace --release --no-fail-fast \
		--config "target.'cfg(all())'.runner = ['$RPROF_TOP/tests/harness/timeout.sh']"
)
# Every tests/harness/test_*.py: a list to keep up by hand had left
# test_bench_report.py out.  Under the same limit as a test binary.
python_tests() (
	cd "$RPROF_TOP/tests/harness" &&
		./timeout.sh python3 -m unittest discover -v -p 'test_*.py'
)

# run_host_tests: both host steps; their logs go to the summary through
# the array host_logs.
run_host_tests() {
	step host-cargo cargo_tests || true
	step host-harness python_tests || true
	host_logs=(--cargo "$OUT/host-cargo.log" --unittest "$OUT/host-harness.log")
}

# summarize RUN JSON ARGS...: the verdict of the steps so far and the logs
# in ARGS, checked against the list of suites that must run; RUN (check,
# host-test) names the run in README.md's list of allowed skips.
summarize() {
	local run=$1 json=$2
	shift 2
	python3 "$RPROF_TOP/tests/harness/summarize.py" "${steps[@]}" "$@" \
		--expected "$RPROF_TOP/tests/harness/expected-suites.txt" \
		--allowed-skips "$RPROF_TOP/README.md" --run "$run" --json "$json"
}
