#!/bin/sh
# timeout.sh CMD ARGS...: runs one host test binary (cargo's target runner
# in steps.sh) or the harness's unittest run, for at most
# RPROF_HOST_TEST_TIMEOUT seconds (600 by default).  A hung test would
# otherwise stall `make check` instead of failing it.  When the limit is
# hit, CMD and what it started are killed (TERM, KILL 10 s later), this
# line names it for the summary (summarize.py), and the status is 124:
#
#   RPROF-TIMEOUT: CMD ran longer than N s (RPROF_HOST_TEST_TIMEOUT); killed
limit=${RPROF_HOST_TEST_TIMEOUT:-600}
start=$(date +%s)
timeout -k 10 "$limit" "$@"
rc=$?
# 124: timed out; 137: timed out and needed the KILL (or killed otherwise,
# which the time tells apart).
if [ $rc = 124 ] || { [ $rc = 137 ] && [ $(($(date +%s) - start)) -ge "$limit" ]; }; then
	echo "RPROF-TIMEOUT: $* ran longer than $limit s (RPROF_HOST_TEST_TIMEOUT); killed" >&2
	exit 124
fi
exit $rc
