#!/bin/busybox sh
# /init of rprof's test guest.  The kernel console (ttyS0) carries kernel
# messages and KUnit's KTAP; the test channel (ttyS1) carries the TAP of
# the end-to-end scripts between markers the host's summarize.py parses.
# $rprof_mode (from the kernel command line) picks what to run;
# $rprof_e2e (NAME,NAME) limits the end-to-end scripts to those, and
# $rprof_inject=guest-hang makes the guest hang after its end marker
# (tests/harness/vm.sh).

/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
echo 8 >/proc/sys/kernel/printk

exec 3>/dev/ttyS1
suite() { # name script
	echo "# RPROF-SUITE $1" >&3
	sh "$2" >&3 2>&1
	echo "# RPROF-SUITE-END $1 rc=$?" >&3
}

case "${rprof_mode:-check}" in
check)
	# KUnit suites run inside the test module at insmod; their KTAP goes
	# to the console.  A distribution's kernel (make check-distro) has no
	# KUnit and gets no test module.
	[ ! -f /lib/rprof-kunit.ko ] || { insmod /lib/rprof-kunit.ko && rmmod rprof; }
	for t in /tests/e2e/[0-9]*.sh; do
		name=${t##*/}
		name=${name%.sh}
		case ",${rprof_e2e:-$name}," in
		*",$name,"*) suite "$name" "$t" ;;
		esac
	done
	;;
demo)
	sh /tests/demo.sh >&3 2>&1
	;;
bench)
	sh /tests/bench.sh >&3 2>&1
	;;
fuzz)
	# Only the fuzzer, for RPROF_FUZZ_SECONDS (tests/harness/fuzz.sh).
	suite 80-fuzz /tests/e2e/80-fuzz.sh
	;;
esac
echo "# RPROF-DONE" >&3
sync
if [ "${rprof_inject:-}" = guest-hang ]; then
	echo "rprof: RPROF_INJECT=guest-hang: not powering off" >/dev/console
	while :; do sleep 3600; done
fi
poweroff -f
