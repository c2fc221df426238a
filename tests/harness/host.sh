#!/usr/bin/env bash
# `make host-test`: the host's tests only (the userspace workspace with the
# ring model, and the harness's own tests), without the kernel or the
# guest.  Ends with `N passed, N failed, N skipped` like `make check`;
# details in build/host-results.json.
. "$(dirname "$0")/../../scripts/common.sh"
OUT=$RPROF_BUILD/host
rm -rf "$OUT"
mkdir -p "$OUT"
. "$RPROF_TOP/tests/harness/steps.sh"

run_host_tests
summarize host-test "$RPROF_BUILD/host-results.json" "${host_logs[@]}"
