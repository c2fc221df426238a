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
plan 10
load

# 1. cpu1 offline from about 1 s to 2 s of a 4 s session at 1000 Hz.
rprof dump -e cpu-clock@1000 -d 4 --quiet --summary-json >$J &
dump=$!
sleep 1
check "cpu1 goes offline during the session" sh -c "echo 0 >$cpu1 && [ \$(cat $cpu1) = 0 ]"
sleep 1
check "cpu1 comes back online" sh -c "echo 1 >$cpu1 && [ \$(cat $cpu1) = 1 ]"
wait "$dump"
diag "$(cat $J)"
c0=$(json samples_per_cpu.0)
c1=$(json samples_per_cpu.1)
# Without re-created counters cpu1 would have ~1/4 of cpu0's samples;
# with them ~3/4, and all of them had it never gone offline (TCG timing
# is loose, hence the wide band).
check "cpu1 sampled again after coming back ($c1 vs $c0 on cpu0)" \
	test "$c1" -gt $((c0 * 45 / 100)) -a "$c1" -lt $((c0 * 95 / 100))
check "exact accounting across hotplug" sh -c "rprof-e2e lost-invariant <$J"

# 2. cpu1 offline at START, online 1 s into a 3 s session: its counter is
# created when it comes up, so it has about 2/3 of cpu0's samples.  Had
# it not gone offline it would have as many as cpu0; had its counter not
# been created, none.
J=/tmp/hp2.json
check "cpu1 goes offline before a session" sh -c "echo 0 >$cpu1"
check "... and is offline when the session starts" test "$(cat $cpu1)" = 0
rprof dump -e cpu-clock@1000 -d 3 --quiet --summary-json >$J &
dump=$!
sleep 1
check "cpu1 comes online during the session" sh -c "echo 1 >$cpu1 && [ \$(cat $cpu1) = 1 ]"
wait "$dump"
diag "$(cat $J)"
c0=$(json samples_per_cpu.0)
c1=$(json samples_per_cpu.1)
check "cpu1 sampled from when it came up: $c1, below cpu0's $c0 (30-90%)" \
	test "$c1" -gt $((c0 * 30 / 100)) -a "$c1" -lt $((c0 * 90 / 100))
check "exact accounting with a CPU coming up" sh -c "rprof-e2e lost-invariant <$J"
check "rmmod after hotplug sessions" rmmod rprof
done_testing
