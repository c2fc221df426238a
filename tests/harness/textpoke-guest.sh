#!/bin/sh
# Guest half of tests/harness/textpoke.sh: flips scheduler static keys
# (jump labels and static calls in and around __schedule) as fast as the
# shell can, for SECONDS, while both CPUs switch tasks.  rprof is never
# loaded: an "Oops: int3" on the console during this run is not rprof's.
. /tests/e2e/lib.sh
SECONDS_=@SECONDS@
plan 1
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
tp=/sys/kernel/tracing/events/sched/sched_switch/enable
ss=/proc/sys/kernel/sched_schedstats
[ -w $tp ] || tp=
[ -w $ss ] || ss=
diag "keys flipped: ${tp:-no sched_switch tracepoint} ${ss:-no sched_schedstats}"
# Context switches on both CPUs: pipe ping-pong and short sleepers.
for i in 1 2; do (while :; do echo x; done | cat >/dev/null) & done
for i in 1 2 3; do (while :; do usleep 200; done) & done
end=$(($(date +%s) + SECONDS_))
n=0
while [ "$(date +%s)" -lt $end ]; do
	[ -z "$ss" ] || { echo 1 >$ss; echo 0 >$ss; }
	[ -z "$tp" ] || { echo 1 >$tp; echo 0 >$tp; }
	n=$((n + 1))
done
ok "$n rounds of static key flips in $SECONDS_ s; modules loaded: $(grep -c . /proc/modules)"
done_testing
