#!/usr/bin/env bash
# `make demo`: builds what is missing, boots the guest, loads rprof and
# shows what it does (the guest side is tests/harness/demo-guest.sh).
. "$(dirname "$0")/../../scripts/common.sh"
OUT=$RPROF_BUILD/demo
mkdir -p "$OUT"
"$RPROF_TOP/scripts/kernel.sh" >/dev/null
"$RPROF_TOP/scripts/module.sh" >/dev/null
"$RPROF_TOP/scripts/tools.sh" >/dev/null 2>&1
"$RPROF_TOP/scripts/workloads.sh" build >/dev/null
"$RPROF_TOP/tests/harness/vm.sh" demo "$OUT"
sed -n '/^# RPROF-DONE/q;p' "$OUT/results.log"
