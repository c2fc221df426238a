#!/bin/sh
# Loading and unloading rprof.ko: parameters, the device node, module refs.
. /tests/e2e/lib.sh

plan 20
unload
check "insmod with default parameters" insmod "$RPROF_KO"
check "/dev/rprof appears" test -c /dev/rprof
check "/dev/rprof is mode 0600" sh -c 'ls -l /dev/rprof | grep -q "^crw-------"'
check "load message names the ABI and sizes" sh -c 'dmesg | grep -q "rprof: /dev/rprof ready (ABI 2, ring_records=4096, buffer_pages=256)"'
check "rmmod" rmmod rprof
check "/dev/rprof is gone after rmmod" test ! -e /dev/rprof

check_fails "ring_records=1000 (not a power of 2) fails insmod" insmod "$RPROF_KO" ring_records=1000
check "... with a dmesg line naming the parameter" sh -c 'dmesg | grep -q "rprof: ring_records=1000 is invalid"'
check "... and leaves no module behind" sh -c '! grep -q "^rprof " /proc/modules'
check_fails "ring_records=16 (too small) fails insmod" insmod "$RPROF_KO" ring_records=16
check_fails "buffer_pages=3 fails insmod" insmod "$RPROF_KO" buffer_pages=3
check "... with a dmesg line naming the parameter" sh -c 'dmesg | grep -q "rprof: buffer_pages=3 is invalid"'
check_fails "buffer_pages=0 fails insmod" insmod "$RPROF_KO" buffer_pages=0

check "insmod ring_records=128 buffer_pages=4" insmod "$RPROF_KO" ring_records=128 buffer_pages=4
check "parameters are visible in sysfs" sh -c '[ "$(cat /sys/module/rprof/parameters/ring_records)" = 128 ] && [ "$(cat /sys/module/rprof/parameters/buffer_pages)" = 4 ]'

# An open file holds a module reference: rmmod must refuse, then succeed.
exec 3</dev/rprof
check "refcount is 1 while /dev/rprof is open" sh -c '[ "$(cat /sys/module/rprof/refcnt)" = 1 ]'
check_fails "rmmod refused while /dev/rprof is open" rmmod rprof
exec 3<&-
check "rmmod succeeds once it is closed" rmmod rprof

cycles=0
for i in 1 2 3; do
	insmod "$RPROF_KO" && rmmod rprof || break
	cycles=$i
done
check "three more load/unload cycles" test "$cycles" = 3
check "... leave no module behind" sh -c '! grep -q "^rprof " /proc/modules'

done_testing
