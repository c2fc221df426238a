#!/bin/sh
# A sampled process that holds its own mmap_lock for seconds must not stall
# the profiler or the kernel through rprof (issue 29): while rprof_mmhold.ko
# holds the lock of a spinning, sampled process for 6 s, GET_STATS, a
# module unload (rprof's module notifier drains) and STOP each return
# promptly, and the samples the drain could not resolve are counted as
# lost for a busy mmap_lock, in the stream and in GET_STATS.  On a module
# whose drain waits for the lock (5b2898b), each waited for the end of its
# hold: GET_STATS 5.45 s, the unload 5.14 s, STOP 3.79 s.
. /tests/e2e/lib.sh
plan 6

# Seconds since boot, to the centisecond.
now() { cut -d' ' -f1 /proc/uptime; }
# timed DESC LIMIT_S CMD...: passes when CMD succeeds within LIMIT_S
# seconds (the lock is held for 8).
timed() {
	desc=$1
	limit=$2
	shift 2
	t0=$(now)
	if out=$("$@" 2>&1); then rc=0; else rc=$?; fi
	t1=$(now)
	took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	if [ $rc -eq 0 ] && awk -v t="$took" -v l="$limit" 'BEGIN { exit !(t < l) }'; then
		ok "$desc: ${took} s"
	else
		not_ok "$desc: ${took} s (limit $limit s, exit $rc)"
		diag "$out"
	fi
}

load || exit 0
/tests/bin/attr_main 30 >/dev/null &
spin=$!
rprof dump -p "$spin" -e cpu-clock@1000 -d 600 --quiet --summary-json --raw /tmp/mm.raw >/tmp/mm.json &
dump=$!
sleep 1
# hold: rprof_mmhold.ko takes the spinner's mmap_lock for 6 s, in the
# background; once its init sleeps with the lock, samples of the spinner
# pile up.  unhold: waits for it, checks it let go, unloads it.
hold() {
	insmod /lib/rprof_mmhold.ko pid="$spin" ms=6000 &
	holder=$!
	sleep 2
}
held_all=0
unhold() {
	wait "$holder"
	held=$?
	rmmod rprof_mmhold 2>/dev/null
	[ $held -eq 0 ] || held_all=$held
}

# Each operation under a hold of its own: on a module that waits for the
# lock, each would take the rest of the hold (about 4 s).
hold
timed "GET_STATS with a sampled process's mmap_lock held" 3 rprof stat
unhold
hold
timed "a module unload (the notifier drains) with the lock held" 3 sh -c \
	'insmod /lib/rprof_busy.ko spin_ms=20 && rmmod rprof_busy'
unhold
hold
# STOP (rprof dump's SIGTERM): the dump is this shell's child, so it is
# timed here rather than in timed's subshell.
t0=$(now)
kill -TERM "$dump"
wait "$dump"
rc=$?
took=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
if [ $rc -eq 0 ] && awk -v t="$took" 'BEGIN { exit !(t < 3) }'; then
	ok "STOP and the end of the session with the lock held: ${took} s"
else
	not_ok "STOP and the end of the session with the lock held: ${took} s (limit 3 s, exit $rc)"
fi
unhold
if [ $held_all -eq 0 ]; then
	ok "the holder let go each time (insmod returned 0)"
else
	not_ok "the holder let go each time (an insmod returned $held_all)"
fi
kill "$spin" 2>/dev/null
wait "$spin" 2>/dev/null
busy=$(sed -n 's/.*"mm_busy":\([0-9]*\).*/\1/p' /tmp/mm.json)
if [ "${busy:-0}" -gt 0 ]; then
	ok "samples lost for a busy mmap_lock are counted: $busy"
else
	not_ok "samples lost for a busy mmap_lock are counted (none in the summary)"
	diag "$(cat /tmp/mm.json)"
fi
check "... exact accounting" rprof-e2e lost-invariant </tmp/mm.json
unload
done_testing
