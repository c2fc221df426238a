#!/bin/sh
# In the guest: what rprof shows today.
set -x
insmod /lib/rprof.ko
ls -l /dev/rprof
rprof version
rprof-e2e run-as-uid 65534 rprof version
taskset -c 1 sh -c 'while :; do :; done' &
busy=$!
rprof dump -e cpu-clock@1000 -d 1 >/tmp/dump.txt
head -n 12 /tmp/dump.txt
rprof dump -e cpu-clock@1000 -d 1 --quiet
kill $busy
rprof stat
rmmod rprof
