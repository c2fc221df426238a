#!/bin/sh
# Cookies of files the session owner cannot reach: a program run from a
# tmpfs mounted in another mount namespace.
. /tests/e2e/lib.sh

plan 4
load
mkdir -p /mnt/ns
rprof dump -e cpu-clock@1000 -d 3 >/tmp/ns.txt 2>&1 &
dump=$!
sleep 0.5
unshare -m sh -c 'mount -t tmpfs none /mnt/ns && cp /tests/bin/short /mnt/ns/short &&
	for i in 1 2 3 4 5 6 7 8; do /mnt/ns/short; done'
wait "$dump"
diag "$(grep '^COOKIE' /tmp/ns.txt)"
check "a program in another mount namespace gets a cookie" grep -q '^COOKIE .*/ns/short' /tmp/ns.txt
check "... marked unreachable from the owner's root" grep -q '^COOKIE .*/ns/short.* unreachable' /tmp/ns.txt
check "busybox run in the owner's namespace is not marked" sh -c 'grep "^COOKIE .*/bin/busybox" /tmp/ns.txt | grep -vq unreachable'
check "the mount is not visible here" sh -c '! grep -q " /mnt/ns " /proc/mounts'
unload
done_testing
