#!/bin/sh
# The event buffer's mapping resists misuse (as perf's and the BPF ring
# buffer's selftests check).
. /tests/e2e/lib.sh

plan 1
load
check "mmap hardening: protections, sizes, mremap, munmap, fork, close" rprof-e2e mmap-hardening
unload
done_testing
