#!/bin/sh
# The call-sequence fuzzer (tests/fuzz/README.md): random programs of calls
# on the device, its mappings, epoll, threads, children, CPU hotplug and a
# perf_event_open user, then a normal session must still work with exact
# accounting.  A kernel report in the console fails the run in the harness;
# here the fuzzer's exit status (its oracles, its health checks) counts.
#   RPROF_FUZZ_SEED     the seed (default: the clock); printed either way
#   RPROF_FUZZ_CALLS    the budget in calls (default 20000), at most 240 s
#   RPROF_FUZZ_SECONDS  run this long instead of a budget (make fuzz)
#   RPROF_FUZZ_EXCLUDE  calls left out (rprof-fuzz -x), e.g. cpu,perf
. /tests/e2e/lib.sh

seed=${RPROF_FUZZ_SEED:-$(date +%s)}
# 20000 calls take about 30 s on an idle host.  A host busy with other
# guests slows the fuzzer's many short timed waits far more than the other
# suites (28 calls a second were measured once): the time cap keeps the
# run bounded, and the output says how many calls ran.
if [ -n "${RPROF_FUZZ_SECONDS:-}" ]; then
	budget="-t $RPROF_FUZZ_SECONDS"
	limit=$((RPROF_FUZZ_SECONDS + 120))
else
	budget="-n ${RPROF_FUZZ_CALLS:-20000} -t 240"
	limit=400
fi
[ -z "${RPROF_FUZZ_EXCLUDE:-}" ] || budget="$budget -x $RPROF_FUZZ_EXCLUDE"

# A small event buffer and rings: sessions are cheaper to set up under
# TCG with KASAN (SET_CONFIG allocates both), and the programs reach the
# full-buffer and lost-record paths more often.  unwind_kb=256: a table
# of 25000 rows, or a few of 10000, passes a session's budget (ENOSPC).
unload
load ring_records=256 buffer_pages=16 unwind_kb=256
diag "rprof-fuzz -s $seed $budget (RPROF_FUZZ_SEED=$seed reruns this seed)"
# -k: each program's seed goes to the console, before whatever it causes.
/tests/bin/rprof-fuzz -k -s "$seed" $budget >/tmp/fuzz.out 2>&1 &
fuzz=$!
# The fuzzer bounds its own blocking calls; a task stuck in the kernel
# would not die, so wait with a deadline rather than forever.
end=$(($(date +%s) + limit))
while kill -0 $fuzz 2>/dev/null && [ "$(date +%s)" -lt $end ]; do
	sleep 1
done
if kill -0 $fuzz 2>/dev/null; then
	not_ok "rprof-fuzz -s $seed $budget ends within $limit s"
	for s in /proc/$fuzz/task/*/stack; do
		diag "$s: $(cat "$s" 2>&1)"
	done
	kill -9 $fuzz
else
	wait $fuzz
	rc=$?
	calls=$(sed -n 's/^rprof-fuzz: seed [^:]*: \([0-9]*\) calls in .*/\1/p' /tmp/fuzz.out)
	check "rprof-fuzz -s $seed $budget exits 0 (exit $rc) after ${calls:-?} calls" test $rc = 0
fi
diag "$(cat /tmp/fuzz.out)"

# Valid configurations with an event buffer of another size than the
# module's, and with call chains (reach rows set_config:pages and
# set_config:chains): reached, and mostly taken.  The fuzzer's own oracle
# fails any refusal of a valid one it cannot explain; this fails a
# generator that stopped making them, or made them for nothing but EBUSY.
for row in pages chains; do
	set -- $(awk -v row="set_config:$row" '$1 == row {
		for (i = 2; i < NF; i += 2) {
			if ($i ~ /^\(/) break
			n = $(i + 1); sub(/,$/, "", n); all += n
			if ($i == "ok") ok = n
		} } END { print ok + 0, all + 0 }' /tmp/fuzz.out)
	check "valid SET_CONFIGs with $row: $1 of $2 accepted (at least 10 and a quarter)" \
		test "$1" -ge 10 -a $((4 * $1)) -ge "$2"
done

rprof dump -e cpu-clock@1000 -d 1 --quiet --summary-json >/tmp/fuzz.json
check "after the fuzzer, a session works and its accounting is exact" \
	sh -c 'rprof-e2e lost-invariant </tmp/fuzz.json'
check "the module unloads after the fuzzer" rmmod rprof
done_testing
