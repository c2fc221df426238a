#!/usr/bin/env bash
# `make check`: installs what is missing, builds the test kernel (cached),
# the modules and the static tools, runs the host tests, boots the guest
# for KUnit and the end-to-end scripts, and ends with `N passed, N failed`
# (details in build/test-results.json).
. "$(dirname "$0")/../../scripts/common.sh"

OUT=$RPROF_BUILD/check
rm -rf "$OUT"
mkdir -p "$OUT"
steps=()

# step NAME CMD...: runs a build step, logging to $OUT/NAME.log.
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

summarize() {
	python3 "$RPROF_TOP/tests/harness/summarize.py" "${steps[@]}" "$@" \
		--json "$RPROF_BUILD/test-results.json"
}

step deps "$RPROF_TOP/scripts/deps.sh" || { summarize; exit 1; }

# Host tests: the userspace workspace (with the ring model) and the harness.
(cd "$RPROF_TOP/tools" && cargo test --workspace --release) >"$OUT/host-cargo.log" 2>&1 || true
(cd "$RPROF_TOP/tests/harness" && python3 -m unittest -v test_summarize test_source_rules test_exports) >"$OUT/host-harness.log" 2>&1 || true
host=(--cargo "$OUT/host-cargo.log" --unittest "$OUT/host-harness.log")

ok=1
step kernel "$RPROF_TOP/scripts/kernel.sh" || ok=0
[ $ok = 1 ] && { step module "$RPROF_TOP/scripts/module.sh" || ok=0; }
[ $ok = 1 ] && { step tools "$RPROF_TOP/scripts/tools.sh" || ok=0; }
[ $ok = 1 ] && { step workloads "$RPROF_TOP/scripts/workloads.sh" build || ok=0; }
if [ $ok = 1 ]; then
	"$RPROF_TOP/tests/harness/vm.sh" check "$OUT"
	summarize "${host[@]}" --console "$OUT/console.log" --results "$OUT/results.log"
else
	summarize "${host[@]}"
fi
