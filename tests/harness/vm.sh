#!/usr/bin/env bash
# Boots rprof's test guest once and collects its two logs.
#   tests/harness/vm.sh MODE OUTDIR
# MODE is check, demo or bench (see guest-init.sh).  Needs the kernel, the
# modules and the static tools built (check.sh does that).  Writes
# OUTDIR/console.log (kernel console) and OUTDIR/results.log (test channel).
# RPROF_VM_HOOK, if set, is run with the initramfs tree as its argument
# before the tree is packed (the benchmark adds its own files so).
# RPROF_VM_RENICE=0 leaves QEMU's threads alone (with -icount, QEMU runs
# all vCPUs in one thread, and guest time does not depend on the host).
. "$(dirname "$0")/../../scripts/common.sh"

MODE=${1:?mode}
OUT=${2:?outdir}
TIMEOUT=${RPROF_VM_TIMEOUT:-900}
KDIR=$(kernel_dir)
TOOLS=$RPROF_TOP/tools/target/x86_64-unknown-linux-gnu/release

root=$OUT/initramfs
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,lib,proc,sys,dev,tmp,etc,tests/e2e}
cp /bin/busybox "$root/bin/busybox"
cp "$RPROF_TOP/tests/harness/guest-init.sh" "$root/init"
cp "$RPROF_BUILD/module/rprof.ko" "$root/lib/rprof.ko"
[ ! -f "$RPROF_BUILD/module-kunit/rprof.ko" ] || cp "$RPROF_BUILD/module-kunit/rprof.ko" "$root/lib/rprof-kunit.ko"
for b in rprof rprof-e2e; do
	cp "$TOOLS/$b" "$root/bin/$b"
done
cp "$RPROF_TOP"/tests/e2e/*.sh "$root/tests/e2e/"
cp "$RPROF_TOP"/tests/harness/demo-guest.sh "$root/tests/demo.sh"
[ ! -f "$RPROF_BUILD/module-bench/rprof.ko" ] || cp "$RPROF_BUILD/module-bench/rprof.ko" "$root/lib/rprof-bench.ko"
cp "$RPROF_TOP"/tests/harness/bench-guest.sh "$root/tests/bench.sh"
# Workload programs, their shared libraries and the busy test module.
"$RPROF_TOP/scripts/workloads.sh" install "$root"
echo 'root:x:0:0:root:/:/bin/sh' >"$root/etc/passwd"
echo 'nobody:x:65534:65534:nobody:/:/bin/sh' >>"$root/etc/passwd"
chmod +x "$root/init"
[ -z "${RPROF_VM_HOOK:-}" ] || $RPROF_VM_HOOK "$root"
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) >"$OUT/initramfs.cpio.gz"

rm -f "$OUT/console.log" "$OUT/results.log"

# Under TCG each vCPU is a host thread that spins while the guest is busy,
# and QEMU's main loop, which fires the guest's timers, competes with them
# for the host's cores: with both vCPUs busy on a 2-core host, guest
# hrtimers fire late and ticks are lost (measured 81-93% of a 1000 Hz
# clock).  The vCPU threads get a lower priority than the main loop, so
# the timers are served first.
deprioritise_vcpus() { # QEMU_PID
	local t n
	for _ in $(seq 50); do
		n=0
		for t in /proc/"$1"/task/*; do
			case "$(cat "$t/comm" 2>/dev/null)" in
			CPU*) renice -n 5 -p "${t##*/}" >/dev/null 2>&1 && n=$((n + 1)) ;;
			esac
		done
		[ "$n" -ge 2 ] && return 0
		sleep 0.1
	done
	msg "could not lower the vCPU threads' priority (found $n)"
}

msg "booting the guest ($MODE; console: $OUT/console.log)"
set +e
timeout -k 10 "$TIMEOUT" qemu-system-x86_64 -name rprof,debug-threads=on \
	-machine q35 -cpu max -m 1024 -smp 2 ${RPROF_QEMU_EXTRA:-} \
	-display none -monitor none -no-reboot \
	-serial "file:$OUT/console.log" -serial "file:$OUT/results.log" \
	-kernel "$KDIR/arch/x86/boot/bzImage" -initrd "$OUT/initramfs.cpio.gz" \
	-append "console=ttyS0 panic=-1 rprof_mode=$MODE" </dev/null &
runner=$!
for _ in $(seq 50); do
	qemu=$(pgrep -P "$runner" qemu-system 2>/dev/null | head -n 1)
	[ -n "$qemu" ] && break
	sleep 0.1
done
[ -z "$qemu" ] || [ "${RPROF_VM_RENICE:-1}" = 0 ] || deprioritise_vcpus "$qemu"
wait "$runner"
rc=$?
set -e
[ $rc -eq 0 ] || msg "qemu exited with $rc (124: timed out after ${TIMEOUT}s)"
exit 0
