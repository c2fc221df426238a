#!/usr/bin/env bash
# `make bench`: builds the benchmark module and boots the guest once; prints
# the cost of one ring write in rprof and in the kernel's ftrace ring
# buffer, and their ratio, for three runs.  Figures, not a pass/fail test.
. "$(dirname "$0")/../../scripts/common.sh"
OUT=$RPROF_BUILD/bench
mkdir -p "$OUT"
"$RPROF_TOP/scripts/kernel.sh" >/dev/null
"$RPROF_TOP/scripts/module.sh" >/dev/null
"$RPROF_TOP/scripts/module.sh" bench >/dev/null
"$RPROF_TOP/scripts/tools.sh" >/dev/null 2>&1
"$RPROF_TOP/scripts/workloads.sh" build >/dev/null
"$RPROF_TOP/tests/harness/vm.sh" bench "$OUT"
sed -n '/^# RPROF-DONE/q;p' "$OUT/results.log"
