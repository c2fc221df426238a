#!/bin/sh
# What a hostile but privileged user did to the module once (issue 9):
# each check replays one crash or lock inversion.  An oops, a KASAN report
# or a lockdep splat on the console fails the run whatever the check says.
. /tests/e2e/lib.sh

plan 5
load
check "read() refuses nonsense in data_tail and ignores data_head" rprof-e2e hostile-tail
check "epoll, poll and read sleepers survive a second SET_CONFIG" rprof-e2e epoll-reconfig
check "rprof sessions beside a perf_event user (no lock cycle)" rprof-e2e perf-beside 5
check "GET_STATS refuses unknown non-zero bytes and oversized structures" rprof-e2e stats-size
check "a reader blocked in read() gets STOP before end-of-file (20 sessions)" rprof-e2e eof-after-stop 20
unload
done_testing
