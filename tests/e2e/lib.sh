# TAP helpers for the end-to-end scripts (busybox sh).  Source it.
# Each script prints TAP on stdout and ends with done_testing.  A script
# whose number of tests is fixed says so first with `plan N`, so that the
# harness (tests/harness/summarize.py) can tell a script that stopped
# early from one that ran everything; the others get their plan printed
# by done_testing.  A script with no result at all fails, so a check that
# cannot run here is reported with `skip`, never left out.

T_N=0
T_PLAN=
RPROF_KO=${RPROF_KO:-/lib/rprof.ko}

# plan N: N tests follow.
plan() {
	T_PLAN=$1
	echo "1..$1"
}

ok() {
	T_N=$((T_N + 1))
	echo "ok $T_N - $*"
}

not_ok() {
	T_N=$((T_N + 1))
	echo "not ok $T_N - $*"
}

# skip DESC: a test that cannot run here, counted as skipped.
skip() {
	T_N=$((T_N + 1))
	echo "ok $T_N - # SKIP $*"
}

diag() {
	echo "$*" | sed 's/^/# /'
}

# check DESC CMD...: passes when CMD exits 0; shows its output otherwise.
check() {
	desc=$1
	shift
	if out=$("$@" 2>&1); then
		ok "$desc"
	else
		not_ok "$desc"
		diag "$out"
	fi
}

# check_fails DESC CMD...: passes when CMD exits non-zero.
check_fails() {
	desc=$1
	shift
	if out=$("$@" 2>&1); then
		not_ok "$desc"
		diag "expected failure, got success: $out"
	else
		ok "$desc"
	fi
}

# send_file NAME PATH [KEY=VALUE...]: PATH out to the host on the test
# channel, base64 in `#` lines between `# RPROF-FILE-BEGIN NAME KEY=VALUE...`
# and `# RPROF-FILE-END NAME` (tests/harness/guest_pprof.py reads them).
# Nothing is sent for a file that cannot be read: the host then reports
# the block missing.
send_file() {
	sf_name=$1
	sf_path=$2
	shift 2
	[ -r "$sf_path" ] || return 0
	echo "# RPROF-FILE-BEGIN $sf_name $*"
	base64 "$sf_path" | sed 's/^/# /'
	echo "# RPROF-FILE-END $sf_name"
}

# wait_for SECONDS N PATTERN FILE: until FILE has N lines matching
# PATTERN, at most SECONDS.
wait_for() {
	i=0
	while [ $i -lt $(($1 * 10)) ]; do
		# The file may not exist yet: the background command opens it
		# after the fork (a missing file stopped this loop at once).
		n=$(grep -c "$3" "$4" 2>/dev/null)
		[ "${n:-0}" -lt "$2" ] || break
		sleep 0.1
		i=$((i + 1))
	done
}

# daemon_on_process NAME CMD [DAEMON ARGS...]: `rprof daemon -p` on a
# shell that execs CMD once the daemon is up (its profiles in /tmp/NAME,
# its lines in /tmp/NAME.out); waits for CMD to end and for the daemon to
# stop by itself (SIGTERM after 30 s).  Sets p (the process), ended (when
# it ended, in seconds) and rc (the daemon's exit status).
daemon_on_process() {
	dp_name=$1 dp_cmd=$2
	shift 2
	mkdir -p /tmp/$dp_name
	rm -f /tmp/$dp_name.go
	sh -c "while [ ! -e /tmp/$dp_name.go ]; do sleep 0.1; done; exec $dp_cmd" >/dev/null &
	p=$!
	rprof daemon -p $p --dir /tmp/$dp_name "$@" >/tmp/$dp_name.out 2>&1 &
	dp_d=$!
	wait_for 30 1 '^rprof daemon: profiling into' /tmp/$dp_name.out
	touch /tmp/$dp_name.go
	wait $p
	ended=$(date +%s)
	wait_for 30 1 '^rprof daemon: stopped' /tmp/$dp_name.out
	kill -TERM $dp_d 2>/dev/null
	wait $dp_d
	rc=$?
	diag "$(cat /tmp/$dp_name.out)"
}

module_loaded() {
	grep -q '^rprof ' /proc/modules
}

# load [PARAM=VALUE...]: rprof loaded with exactly these parameters.  A
# module already loaded is unloaded first; when that or insmod fails, a
# failed test says so (a later check would otherwise run against the
# wrong parameters, or none).
load() {
	if module_loaded && ! rmmod rprof; then
		not_ok "load $*: rprof is loaded and cannot be unloaded"
		return 1
	fi
	if ! out=$(insmod "$RPROF_KO" "$@" 2>&1); then
		not_ok "load $*: insmod $RPROF_KO failed"
		diag "$out"
		return 1
	fi
}

unload() {
	! module_loaded || rmmod rprof
}

done_testing() {
	if [ -z "$T_PLAN" ]; then
		echo "1..$T_N"
	elif [ "$T_N" -ne "$T_PLAN" ]; then
		diag "planned $T_PLAN tests, ran $T_N"
	fi
	exit 0
}
