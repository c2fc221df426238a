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

up() { cut -d' ' -f1 /proc/uptime; }

# 1. cpu1 offline for about 1 s in the middle of a session at 1000 Hz.
# Going offline and online takes the guest a while (seconds on a busy
# host), so the session runs until a second after cpu1 is back, each
# step is timed (/proc/uptime: CLOCK_BOOTTIME, the stream's clock in a
# guest that never suspends) and the expected share of cpu0's samples
# comes from the times: with its counter re-created, cpu1 samples for the
# session minus between (online started - offline done) and (online done
# - offline started); without, only until it went offline.
rprof dump -e cpu-clock@1000 -d 600 --quiet --summary-json >$J &
dump=$!
sleep 1
a=$(up)
check "cpu1 goes offline during the session" sh -c "echo 0 >$cpu1 && [ \$(cat $cpu1) = 0 ]"
b=$(up)
sleep 1
c=$(up)
check "cpu1 comes back online" sh -c "echo 1 >$cpu1 && [ \$(cat $cpu1) = 1 ]"
d=$(up)
sleep 1
kill -TERM "$dump"
wait "$dump"
diag "$(cat $J)"
c0=$(json samples_per_cpu.0)
c1=$(json samples_per_cpu.1)
s0=$(json start_ns)
s1=$(json stop_ns)
band=$(awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v s0="$s0" -v s1="$s1" 'BEGIN {
	s0 /= 1e9; s1 /= 1e9; S = s1 - s0
	lo = 1 - (d - a) / S; hi = 1 - (c - b) / S; before = (b - s0) / S
	# Timer ticks under TCG are loose: 20% either side, and always above
	# what cpu1 would have without its counter back (1.5 x before).
	lo = lo * 0.8; if (lo < before * 1.5) lo = before * 1.5
	hi = hi * 1.2; if (hi > 0.97) hi = 0.97
	printf "%d %d", lo * 100, hi * 100 }')
lo=${band% *}
hi=${band#* }
diag "session $s0-$s1 ns, cpu1 offline from $a-$b to $c-$d s: expected at $lo-$hi% of cpu0"
check "cpu1 sampled again after coming back ($c1 vs $c0 on cpu0, expected $lo-$hi%)" \
	test "$lo" -lt "$hi" -a "$c1" -gt $((c0 * lo / 100)) -a "$c1" -lt $((c0 * hi / 100))
check "exact accounting across hotplug" sh -c "rprof-e2e lost-invariant <$J"

# 2. cpu1 offline at START, online about 1 s into the session, which
# runs until a second after it is up: its counter is created when it
# comes up, so it samples from (online started) or (online done) to
# STOP.  Had its counter not been created, it would have none.
J=/tmp/hp2.json
check "cpu1 goes offline before a session" sh -c "echo 0 >$cpu1"
check "... and is offline when the session starts" test "$(cat $cpu1)" = 0
rprof dump -e cpu-clock@1000 -d 600 --quiet --summary-json >$J &
dump=$!
sleep 1
a=$(up)
check "cpu1 comes online during the session" sh -c "echo 1 >$cpu1 && [ \$(cat $cpu1) = 1 ]"
b=$(up)
sleep 1
kill -TERM "$dump"
wait "$dump"
diag "$(cat $J)"
c0=$(json samples_per_cpu.0)
c1=$(json samples_per_cpu.1)
s0=$(json start_ns)
s1=$(json stop_ns)
band=$(awk -v a="$a" -v b="$b" -v s0="$s0" -v s1="$s1" 'BEGIN {
	s0 /= 1e9; s1 /= 1e9; S = s1 - s0
	lo = (s1 - b) / S * 0.8; hi = (s1 - a) / S * 1.2; if (hi > 0.97) hi = 0.97
	printf "%d %d", lo * 100, hi * 100 }')
lo=${band% *}
hi=${band#* }
diag "session $s0-$s1 ns, cpu1 online from $a-$b s: expected at $lo-$hi% of cpu0"
check "cpu1 sampled from when it came up: $c1 vs cpu0's $c0 (expected $lo-$hi%)" \
	test "$lo" -gt 0 -a "$lo" -lt "$hi" -a "$c1" -gt $((c0 * lo / 100)) -a "$c1" -lt $((c0 * hi / 100))
check "exact accounting with a CPU coming up" sh -c "rprof-e2e lost-invariant <$J"
check "rmmod after hotplug sessions" rmmod rprof
done_testing
