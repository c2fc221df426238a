#!/bin/sh
# /dev/rprof basics: version, unknown ioctls, privilege.
. /tests/e2e/lib.sh

plan 6
load
check "GET_VERSION returns RPROF_ABI_VERSION" rprof-e2e version
check "rprof version (the CLI) reports the module's ABI" \
	sh -c 'rprof version >/tmp/v.out && grep -q "module ABI version 2" /tmp/v.out'
check "unknown ioctls get ENOTTY" rprof-e2e ioctl-unknown
# Let the VFS allow everyone, so that the capability check is what refuses.
chmod 0666 /dev/rprof
check "uid 65534 (no capabilities) gets EPERM" rprof-e2e open-as-uid 65534
check "root opens it" rprof-e2e open-as-uid 0 --expect-ok
chmod 0600 /dev/rprof
# rprof's own message, not any line naming rprof: the harness's
# "FAIL: cannot execute rprof: ..." (when nobody cannot run it at all)
# must not pass for it.  (`rprof version` prints its own version first.)
check "rprof as non-root says what is wrong, exits non-zero" sh -c '
	rprof-e2e run-as-uid 65534 rprof version >/tmp/nonroot.out 2>&1; rc=$?
	echo "exit $rc:"; cat /tmp/nonroot.out
	[ $rc -ne 0 ] && grep -q "^rprof: permission denied: rprof needs CAP_PERFMON" /tmp/nonroot.out'
unload
done_testing
