#!/bin/sh
# Resolution end to end: user samples land in the right file and function
# (through a dlopen()ed library too), short-lived processes keep their
# samples, a module loaded during a session is named and attributed, the
# session lets go of the files it named, and LOOKUP_COOKIE agrees with the
# stream.  Workloads: tests/workloads (scripts/workloads.sh).
. /tests/e2e/lib.sh

# Summaries and reports go through files, not `echo | ...`: busybox's echo
# loses its output when a child's SIGCHLD interrupts the write.
invariant() { # SUMMARY.json
	rprof-e2e lost-invariant <"$1"
}

# report DESC OUT CMD...: runs CMD (a rprof-e2e check that prints a JSON
# line of figures, then ok:/FAIL:) into OUT, shows OUT, passes when CMD
# exits 0.
report() {
	desc=$1
	out=$2
	shift 2
	if "$@" >"$out" 2>&1; then
		ok "$desc"
	else
		not_ok "$desc"
	fi
	diag "$(cat "$out")"
}

# repeat N CMD...: runs CMD N times, one after the other.
repeat() {
	rep_n=$1
	shift
	while [ "$rep_n" -gt 0 ]; do
		"$@"
		rep_n=$((rep_n - 1))
	done
}

# record NAME: starts `rprof dump` in the background with a long duration,
# raw stream in /tmp/NAME.raw, summary in /tmp/NAME.json; stop_record ends
# it with SIGTERM (rprof stops, drains and prints its summary).
record() {
	rprof dump -e cpu-clock@1000 -d 600 --quiet --summary-json --raw "/tmp/$1.raw" >"/tmp/$1.json" &
	dump=$!
	# Let it configure and START before the workload runs.
	sleep 1
}
stop_record() {
	kill -TERM "$dump"
	wait "$dump"
}

plan 17
unload
load

# 1. attr_main spends 3/4 of its time in its own main_hot and 1/4 in
# lib_hot of the library it dlopen()s: the samples must say so.  The
# split is a matter of time, and under TCG a busy host skews it now and
# then (3.05 to 3.11 in most runs, once 3.78): a run outside the band is
# repeated once, and both runs are shown.  A misattribution fails both.
attr_run() { # OUT
	rprof dump -e cpu-clock@1000 -d 4 --quiet --summary-json --raw /tmp/a.raw >/tmp/a.json &
	dump=$!
	/tests/bin/attr_main 3 >/tmp/attr_main.out 2>&1
	wait "$dump"
	rprof-e2e attribution /tmp/a.raw --bin /tests/bin/attr_main:main_hot \
		--bin /tests/bin/libattr_lib.so:lib_hot --pid-comm attr_main >"$1" 2>&1
}
attr_run /tmp/a.attr
rc=$?
if [ $rc -ne 0 ]; then
	diag "first run, repeated: $(cat /tmp/attr_main.out /tmp/a.attr)"
	attr_run /tmp/a.attr
	rc=$?
fi
diag "$(cat /tmp/attr_main.out)"
# The verdict is the last run's rprof-e2e status.
report "attr_main: >= 90% of its user samples in attr_main and libattr_lib.so, main_hot:lib_hot 3:1 within 25%" \
	/tmp/a.report sh -c "cat /tmp/a.attr; exit $rc"
check "... exact accounting" invariant /tmp/a.json

# 2. 200 processes of about 20 ms each: their samples resolve to their
# executable (and inside short_hot) even though each has exited by the
# time the drain sees it.  Under TCG the dynamic loader's start-up takes
# about as long as short's 20 ms of work (measured: 54% of short's user
# samples in /tests/bin/short, 38% in ld.so, 7% in libc; with KASAN, whose
# exec and page faults are slower, 37% / 53% / 10%).  Samples in ld.so and
# libc are in the right files too: what must hold is 95% in some file, a
# fifth in the program itself, and its samples in short_hot.
# short does a fixed number of calls, not 20 ms of the clock: with the
# host busy, a timed run got fewer instructions of its own against the
# loader's fixed count, and its share fell to 11.5% (ld.so 73%) in a
# make check beside a kernel build.  A matter of time, not of names:
# 98.3% of the samples were in the right files.
SHORT_OPTS="--min-fraction 0.2 --min-file-fraction 0.95 --symbol short_hot"
record s
repeat 200 /tests/bin/short
stop_record
report "200 short-lived processes: samples resolve to /tests/bin/short:short_hot, LOST no_mm+no_mapping < 5%" \
	/tmp/s.report rprof-e2e resolved-fraction /tmp/s.raw --comm short --path /tests/bin/short $SHORT_OPTS
check "... exact accounting" invariant /tmp/s.json

# 3. A module loaded and unloaded during the session: its init spins for
# 300 ms in its own text.
record m
insmod /lib/rprof_busy.ko
rmmod rprof_busy
stop_record
report "rprof_busy: MODULE record, kernel samples inside its text, UNLOAD record" \
	/tmp/m.report rprof-e2e module-samples /tmp/m.raw --name rprof_busy --ko /lib/rprof_busy.ko --function rprof_busy_spin
check "... exact accounting" invariant /tmp/m.json

# 4. The session holds references on the files it names, until it ends:
# a file system whose program was sampled cannot be unmounted while the
# session lives (EBUSY), and unmounts once the dump exits.
mkdir -p /mnt/t
mount -t tmpfs tmpfs /mnt/t
cp /tests/bin/short /mnt/t/short
record t
# Twenty runs: with five (about 60 user samples), the stream-wide bound
# on no_mm + no_mapping losses (5% of them: 3 samples) was at the mercy
# of whatever else ran.
repeat 20 /mnt/t/short
# Past the periodic drain (50 ms), which resolves the samples and takes
# the references.
sleep 1
if umount /mnt/t 2>/tmp/umount.err; then
	not_ok "the tmpfs is busy while the session names its program: umount succeeded"
	mount -t tmpfs tmpfs /mnt/t
else
	check "the tmpfs is busy while the session names its program: $(cat /tmp/umount.err)" \
		grep -qi "busy" /tmp/umount.err
fi
stop_record
# The bars of the 200 runs above: short's startup in ld.so is as long as
# its own work.
report "a program on a tmpfs is named by its path" \
	/tmp/t.report rprof-e2e resolved-fraction /tmp/t.raw --comm short --path /mnt/t/short \
	$SHORT_OPTS --min-samples 20
check "... exact accounting" invariant /tmp/t.json
if umount /mnt/t 2>/tmp/umount.err; then
	ok "the tmpfs unmounts after the session: no reference left on its files"
else
	diag "first umount: $(cat /tmp/umount.err)"
	sleep 1
	check "the tmpfs unmounts after the session (second try, 1 s later)" umount /mnt/t
	umount -l /mnt/t 2>/dev/null
fi

# 4b. A program on overlayfs, as containers run theirs, each run exiting
# before the drain reads its samples.  The handler names the mappings of
# the addresses it samples, with a reference on the file; on 6.12 it may
# not take one on an overlay mapping's file (a backing file, which 6.12
# frees without waiting for RCU), so such a record holds its address
# space until the drain instead (src/sampling/maps.rs, `Plan::pin`): the
# samples resolve, and to the path the process sees (as /proc/PID/maps
# names it), not the layer's file that the mapping holds.
if grep -qw overlay /proc/filesystems; then
	mkdir -p /tmp/ovl /mnt/o
	mount -t tmpfs tmpfs /tmp/ovl
	mkdir -p /tmp/ovl/lower /tmp/ovl/upper /tmp/ovl/work
	cp /tests/bin/short /tmp/ovl/lower/short
	mount -t overlay overlay -o lowerdir=/tmp/ovl/lower,upperdir=/tmp/ovl/upper,workdir=/tmp/ovl/work /mnt/o
	record o
	repeat 20 /mnt/o/short
	stop_record
	report "a program on overlayfs, gone before the drain: its samples resolve, to its path on the overlay" \
		/tmp/o.report rprof-e2e resolved-fraction /tmp/o.raw --comm short --path /mnt/o/short \
		$SHORT_OPTS --min-samples 20
	check "... exact accounting" invariant /tmp/o.json
	umount /mnt/o
	umount /tmp/ovl
else
	skip "a program on overlayfs: this kernel has no overlayfs (a module the guest does not load)"
	skip "... exact accounting"
fi

# 5. LOOKUP_COOKIE.
check "LOOKUP_COOKIE: paths as in the stream, ENOENT, ENAMETOOLONG, EINVAL, EBUSY" rprof-e2e lookup-cookie

# 6. A full cookie table does not cost samples (issue 29, item 7): with
# room for 16 cookies, 40 programs in 40 files run one after another.
# Nobody asks for a reset; the module resets by itself (RESET records with
# RPROF_RESET_AUTO in the stream) and names the new files anew.
unload
load max_cookies=16
for i in $(seq 0 39); do
	mkdir -p "/tmp/c$i"
	cp /tests/bin/short "/tmp/c$i/short"
done
record c
for i in $(seq 0 39); do
	"/tmp/c$i/short"
done
stop_record
no_cookie=$(sed -n 's/.*"no_cookie":\([0-9]*\).*/\1/p' /tmp/c.json)
resets=$(sed -n 's/.*"resets":\([0-9]*\).*/\1/p' /tmp/c.json)
if [ "${no_cookie:-x}" = 0 ] && [ "${resets:-0}" -gt 0 ]; then
	ok "40 files, 16 cookies: none lost for want of a cookie, $resets RESETs of the module's own"
else
	not_ok "40 files, 16 cookies: no_cookie ${no_cookie:-?} (expected 0), resets ${resets:-?} (expected > 0)"
	diag "$(cat /tmp/c.json)"
fi
check "... exact accounting" invariant /tmp/c.json

# 7. What a session costs the exits of the processes it samples (issue
# 29, item 3): with 500 idle processes alive, 40 children touch 32 MiB,
# spin 20 ms each (sampled) and exit; the time from exit() to the
# parent's waitpid() returning and to the memory being free again,
# without a session and under rprof record -a.  The module holds no
# sampled address space (KUnit's handler_pins_no_address_space is the
# test); these are the figures, not a timed test.
/tests/bin/exitlat 500 40 20 32 >/tmp/exitlat.none 2>&1
rprof record -a -o /tmp/exitlat.data -- /tests/bin/exitlat 500 40 20 32 >/tmp/exitlat.rprof 2>/tmp/exitlat.err
check "exitlat runs under rprof record -a" grep -q '^exitlat ' /tmp/exitlat.rprof
diag "without a session: $(cat /tmp/exitlat.none)"
diag "under rprof record -a: $(cat /tmp/exitlat.rprof)"
diag "$(grep 'rprof: module:' /tmp/exitlat.err)"

check "the module unloads cleanly after all that" rmmod rprof
done_testing
