# TAP helpers for the end-to-end scripts (busybox sh).  Source it.
# Each script prints TAP on stdout and ends with done_testing.

T_N=0
RPROF_KO=${RPROF_KO:-/lib/rprof.ko}

ok() {
	T_N=$((T_N + 1))
	echo "ok $T_N - $*"
}

not_ok() {
	T_N=$((T_N + 1))
	echo "not ok $T_N - $*"
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

module_loaded() {
	grep -q '^rprof ' /proc/modules
}

load() {
	module_loaded || insmod "$RPROF_KO" "$@"
}

unload() {
	! module_loaded || rmmod rprof
}

done_testing() {
	echo "1..$T_N"
	exit 0
}
