#!/bin/sh
# In the guest: load rprof, profile the demo workload (3/4 of its time in
# main_hot, 1/4 in lib_hot of a dlopen'ed library) and report.
set -x
insmod /lib/rprof.ko
ls -l /dev/rprof
rprof version
rprof-e2e run-as-uid 65534 rprof version
rprof record -o /tmp/demo.data -- /tests/bin/attr_main 2
rprof report -i /tmp/demo.data --stdio --comm attr_main --percent-limit 1
rprof report -i /tmp/demo.data --stdio --sort pid,comm --percent-limit 2
rprof export -i /tmp/demo.data -f folded -o - | sort -k2 -n -r | head -n 5
rprof stat
rmmod rprof
