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
plan 13
load

up() { cut -d' ' -f1 /proc/uptime; }

# in_window FILE CPU FROM TO: the samples `rprof dump` printed in FILE
# that CPU took from FROM to before TO (seconds of the stream's clock;
# either may be empty for an open end).  A sample's CPU is that of the
# TASK record before it.
in_window() {
	awk -v c="$2" -v from="$3" -v to="$4" '
		/^TASK / { sub(/^cpu=/, "", $2); cur = $2 }
		/^SAMPLE / { t = substr($2, 3) / 1e9
			if (cur == c && (from == "" || t >= from) && (to == "" || t < to)) n++ }
		END { print n + 0 }' "$1"
}

# session FILE: a session at 1000 Hz on every CPU, printing its records
# into FILE (the summary JSON last), until SIGTERM.
session() {
	rprof dump -e cpu-clock@1000 -d 600 --summary-json >"$1" &
	dump=$!
	i=0
	while ! grep -q '^START ' "$1" && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	sleep 1
}
stop() {
	kill -TERM "$dump"
	wait "$dump"
	tail -n 1 "$1" >$J
	diag "$(cat $J)"
}

# The windows come from /proc/uptime (CLOCK_BOOTTIME, which is the
# stream's CLOCK_MONOTONIC in a guest that never suspends), taken around
# each step: going offline
# or online takes the guest a while, seconds on a busy host.  Uptime
# has 10 ms steps, read truncated: a window that starts after a step
# starts 20 ms late.  A CPU that is on samples in a window at about
# cpu0's rate: timer ticks under TCG are loose, so a quarter of cpu0's
# samples is enough to tell it from one that is not sampled at all,
# which is what a counter not re-created on the way back gives.  An
# offline CPU takes no sample at all.

# 1. cpu1 offline for about a second in the middle of a session.
D=/tmp/hp1.out
session $D
a=$(up)
check "cpu1 goes offline during the session" sh -c "echo 0 >$cpu1 && [ \$(cat $cpu1) = 0 ]"
b=$(up)
sleep 1
c=$(up)
check "cpu1 comes back online" sh -c "echo 1 >$cpu1 && [ \$(cat $cpu1) = 1 ]"
d=$(up)
sleep 1
stop $D
b=$(awk -v t="$b" 'BEGIN { print t + 0.02 }')
d=$(awk -v t="$d" 'BEGIN { print t + 0.02 }')
set -- $(in_window $D 0 "" "$a") $(in_window $D 1 "" "$a") \
	$(in_window $D 0 "$b" "$c") $(in_window $D 1 "$b" "$c") \
	$(in_window $D 0 "$d" "") $(in_window $D 1 "$d" "")
diag "cpu1 offline from $a-$b to $c-$d s; cpu0/cpu1 samples: before $1/$2, offline $3/$4, after $5/$6"
check "before: cpu1 sampled ($2 vs cpu0's $1)" test "$1" -ge 100 -a $((4 * $2)) -ge "$1"
check "offline: cpu1 took no sample ($4; cpu0 $3)" test "$3" -ge 100 -a "$4" -eq 0
check "cpu1 sampled again after coming back ($6 vs cpu0's $5)" test "$5" -ge 100 -a $((4 * $6)) -ge "$5"
check "exact accounting across hotplug" sh -c "rprof-e2e lost-invariant <$J"

# 2. cpu1 offline at START, online about a second into the session: its
# counter is created when it comes up.
D=/tmp/hp2.out
check "cpu1 goes offline before a session" sh -c "echo 0 >$cpu1"
check "... and is offline when the session starts" test "$(cat $cpu1)" = 0
session $D
a=$(up)
check "cpu1 comes online during the session" sh -c "echo 1 >$cpu1 && [ \$(cat $cpu1) = 1 ]"
b=$(up)
sleep 1
stop $D
b=$(awk -v t="$b" 'BEGIN { print t + 0.02 }')
set -- $(in_window $D 0 "" "$a") $(in_window $D 1 "" "$a") \
	$(in_window $D 0 "$b" "") $(in_window $D 1 "$b" "")
diag "cpu1 online from $a-$b s; cpu0/cpu1 samples: before $1/$2, after $3/$4"
check "offline at START: cpu1 took no sample ($2; cpu0 $1)" test "$1" -ge 100 -a "$2" -eq 0
check "cpu1 sampled from when it came up ($4 vs cpu0's $3)" test "$3" -ge 100 -a $((4 * $4)) -ge "$3"
check "exact accounting with a CPU coming up" sh -c "rprof-e2e lost-invariant <$J"
check "rmmod after hotplug sessions" rmmod rprof
done_testing
