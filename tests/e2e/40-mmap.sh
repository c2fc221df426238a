#!/bin/sh
# The event buffer's mapping resists misuse (as perf's and the BPF ring
# buffer's selftests check).
. /tests/e2e/lib.sh

plan 2
load
check "mmap hardening: protections, sizes, mremap, munmap, fork, close" rprof-e2e mmap-hardening
# Issue 29, item 1: replaced sessions kept mapped cannot pin memory past
# the owner's locked-memory limit.
# The figures (bytes pinned at the refusal) are shown either way.
if out=$(rprof-e2e memlock 2>&1); then
	ok "locked memory: EPERM past RLIMIT_MEMLOCK, given back on munmap; root unbounded"
else
	not_ok "locked memory: EPERM past RLIMIT_MEMLOCK, given back on munmap; root unbounded"
fi
diag "$out"
unload
done_testing
