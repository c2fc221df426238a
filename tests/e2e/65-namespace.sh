#!/bin/sh
# Cookies of files the session owner cannot reach: a program run from a
# tmpfs mounted in another mount namespace.  And rprof used inside a pid
# namespace (a container): the pids it passes are the namespace's.
. /tests/e2e/lib.sh

plan 7
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

# `record -- CMD` in a new pid namespace: the filter's pid is the child's
# number there (a small one, which in the initial namespace is a kernel
# thread), translated by the module at SET_CONFIG.
unshare -p -f --mount-proc sh -c 'rprof record -o /tmp/pidns.data -- /tests/bin/attr_main 1' \
	>/tmp/pidns.out 2>&1
diag "$(tail -n 4 /tmp/pidns.out)"
rprof report -i /tmp/pidns.data --stdio --comm attr_main >/tmp/pidns.report 2>&1
hot=$(grep -E '^ +[0-9.]+% ' /tmp/pidns.report | awk '$NF == "main_hot" { print $2 }')
diag "$(grep -E '^ +[0-9.]+% ' /tmp/pidns.report | head -n 3)"
check "record -- CMD inside a pid namespace profiles CMD (main_hot: ${hot:-none})" [ "${hot:-0}" -gt 100 ]
# A pid that exists outside the namespace but not inside it.
outside=$$
unshare -p -f --mount-proc sh -c "rprof record -p $outside -d 1 -o /tmp/pidns2.data" >/tmp/pidns2.out 2>&1
status=$?
diag "$(cat /tmp/pidns2.out)"
check "-p with a pid of another namespace fails" [ "$status" = 1 ]
check "... saying the pid names no process" grep -q "ESRCH.*names no process" /tmp/pidns2.out
unload
done_testing
