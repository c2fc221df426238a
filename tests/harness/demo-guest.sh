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
rprof export -i /tmp/demo.data -f folded -o /tmp/demo.folded
awk '{ print $NF "\t" $0 }' /tmp/demo.folded | sort -rn | head -n 5 | cut -f 2
rprof stat
rmmod rprof
