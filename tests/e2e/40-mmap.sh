#!/bin/sh
# The event buffer's mapping resists misuse (as perf's and the BPF ring
# buffer's selftests check).
. /tests/e2e/lib.sh

plan 2
load
check "mmap hardening: protections, sizes, mremap, munmap, fork, close" rprof-e2e mmap-hardening
# Issue 29, item 1: replaced sessions kept mapped cannot pin memory past
# the owner's locked-memory limit.
check "locked memory: EPERM past RLIMIT_MEMLOCK, given back on munmap; root unbounded" rprof-e2e memlock
unload
done_testing
