#!/usr/bin/env bash
# `make check`: installs what is missing, builds the test kernel (cached),
# the modules and the static tools, runs the host tests, boots the guest
# for KUnit and the end-to-end scripts, and ends with
# `N passed, N failed, N skipped` (details in build/test-results.json).
#
# The suites that must run are listed in tests/harness/expected-suites.txt.
# The guest's console must show that KASAN and lockdep were on; with
# RPROF_LLVM= (empty: a gcc-built kernel, which cannot have KASAN with
# Rust in 6.12) only lockdep is required.
. "$(dirname "$0")/../../scripts/common.sh"

OUT=$RPROF_BUILD/check
rm -rf "$OUT"
mkdir -p "$OUT"
. "$RPROF_TOP/tests/harness/steps.sh"
JSON=$RPROF_BUILD/test-results.json

step deps "$RPROF_TOP/scripts/deps.sh" || { summarize check "$JSON"; exit 1; }

run_host_tests

boot=(--require-boot lockdep)
[ -z "$RPROF_LLVM" ] || boot+=(--require-boot kasan)

ok=1
step kernel "$RPROF_TOP/scripts/kernel.sh" || ok=0
[ $ok = 1 ] && { step module "$RPROF_TOP/scripts/module.sh" || ok=0; }
# The benchmark's build of the module (`make bench`, RPROF_BENCH=y) is not
# loaded here, but must keep compiling with the rest.
[ $ok = 1 ] && { step module-bench "$RPROF_TOP/scripts/module.sh" bench || true; }
[ $ok = 1 ] && { step tools "$RPROF_TOP/scripts/tools.sh" || ok=0; }
[ $ok = 1 ] && { step workloads "$RPROF_TOP/scripts/workloads.sh" build || ok=0; }
if [ $ok = 1 ]; then
	# QEMU's exit status is a step: a timeout or a crash fails the run
	# even after the guest's end marker.
	step vm "$RPROF_TOP/tests/harness/vm.sh" check "$OUT" || true
	# The guest's pprof files, read on the host by Go's pprof.
	step guest-pprof python3 "$RPROF_TOP/tests/harness/guest_pprof.py" \
		"$OUT/results.log" "$OUT/guest-files" || true
	summarize check "$JSON" "${host_logs[@]}" "${boot[@]}" \
		--console "$OUT/console.log" --results "$OUT/results.log"
else
	summarize check "$JSON" "${host_logs[@]}"
fi
