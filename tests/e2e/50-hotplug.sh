#!/bin/sh
# CPU hotplug during a session: counters follow the CPU off and back on,
# the accounting stays exact, nothing leaks.
. /tests/e2e/lib.sh

# Through a file, not `echo | ...` (see 30-sampling.sh).
J=/tmp/hp.json
json() {
	rprof-e2e json "$1" <$J
}

cpu1=/sys/devices/system/cpu/cpu1/online
if [ ! -w "$cpu1" ]; then
	skip "cpu1 cannot go offline here"
	done_testing
fi
plan 6
load
# 4 s of cpu-clock at 1000 Hz; cpu1 is offline from about 1 s to 2 s.
rprof dump -e cpu-clock@1000 -d 4 --quiet --summary-json >/tmp/hp.json &
dump=$!
sleep 1
check "cpu1 goes offline during the session" sh -c "echo 0 >$cpu1"
sleep 1
check "cpu1 comes back online" sh -c "echo 1 >$cpu1"
wait "$dump"
diag "$(cat $J)"
c0=$(json samples_per_cpu.0)
c1=$(json samples_per_cpu.1)
# Without re-created counters cpu1 would have ~1/4 of cpu0's samples;
# with them ~3/4 (TCG timing is loose, hence the wide band).
check "cpu1 sampled again after coming back ($c1 vs $c0 on cpu0)" \
	test "$c1" -gt $((c0 * 45 / 100)) -a "$c1" -lt $((c0 * 95 / 100))
check "exact accounting across hotplug" sh -c "rprof-e2e lost-invariant <$J"
check "cpu1 offline before START, online during a session" sh -c "
	echo 0 >$cpu1
	rprof dump -e cpu-clock@1000 -d 3 --quiet --summary-json >/tmp/hp2.json &
	sleep 1; echo 1 >$cpu1; wait \$!
	[ \$(rprof-e2e json samples_per_cpu.1 </tmp/hp2.json) -gt 500 ]"
check "rmmod after hotplug sessions" rmmod rprof
done_testing
