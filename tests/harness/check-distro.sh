#!/usr/bin/env bash
# `make check-distro`: the end-to-end suite on a distribution's own
# kernel (issue 13).  scripts/distro.sh builds rprof.ko for Debian sid's
# Rust-enabled kernel in a cached chroot and fetches that kernel's image;
# the guest boots the image unmodified, loads the module and runs every
# tests/e2e script with the static tools, as `make check` does on the test
# kernel.  No KUnit (the distribution's kernel has none) and no checker
# lines are required (it has no KASAN or lockdep); any WARN, BUG or oops
# still fails the run.  Ends with `N passed, N failed, N skipped`.
. "$(dirname "$0")/../../scripts/common.sh"

OUT=$RPROF_BUILD/check-distro
rm -rf "$OUT"
mkdir -p "$OUT"
. "$RPROF_TOP/tests/harness/steps.sh"
JSON=$RPROF_BUILD/test-results-distro.json

# The end-to-end scripts of tests/harness/expected-suites.txt, no more.
grep '^e2e:' "$RPROF_TOP/tests/harness/expected-suites.txt" >"$OUT/expected.txt"
verdict() {
	python3 "$RPROF_TOP/tests/harness/summarize.py" "${steps[@]}" "$@" \
		--expected "$OUT/expected.txt" --allowed-skips "$RPROF_TOP/README.md" \
		--run check-distro --json "$JSON"
}

ok=1
step deps "$RPROF_TOP/scripts/deps.sh" || ok=0
[ $ok = 1 ] && { step distro "$RPROF_TOP/scripts/distro.sh" || ok=0; }
# DKMS in the chroot: a counted step, not a precondition of the guest.
[ $ok = 1 ] && { step dkms "$RPROF_TOP/scripts/distro.sh" --dkms || true; }
[ $ok = 1 ] && { step tools "$RPROF_TOP/scripts/tools.sh" || ok=0; }
[ $ok = 1 ] && { step workloads "$RPROF_TOP/scripts/workloads.sh" build || ok=0; }
if [ $ok = 1 ]; then
	module=$(sed -n 's/^module //p' "$OUT/distro.log")
	kernel=$(sed -n 's/^kernel //p' "$OUT/distro.log")
	busy=$(sed -n 's/^busy //p' "$OUT/distro.log")
	config=$(sed -n 's/^config //p' "$OUT/distro.log")
	# What the distribution's kernel lacks is counted as skipped, with
	# why; what it has is required as on the test kernel.
	krel=$(sed -n 's/^release //p' "$OUT/distro.log")
	why="$krel has no KUnit (CONFIG_KUNIT off)"
	! grep -q '^CONFIG_KUNIT=y' "$config" || why="the KUnit module is built for the test kernel only"
	checks=()
	while read -r suite; do
		checks+=(--skip "$suite=$why")
	done < <(grep '^kunit:' "$RPROF_TOP/tests/harness/expected-suites.txt")
	for c in KASAN:kasan PROVE_LOCKING:lockdep; do
		if grep -q "^CONFIG_${c%%:*}=y" "$config"; then
			checks+=(--require-boot "${c#*:}")
		else
			checks+=(--skip "checker:${c#*:}=$krel has no CONFIG_${c%%:*}: the reports it would print cannot fail this run")
		fi
	done
	# One TCG thread for both vCPUs.  Debian's kernel patches its own
	# text at run time (jump labels, static calls; the test kernel has
	# none), and under QEMU's multi-threaded TCG a CPU now and then runs
	# the int3 of a patch already finished: "Oops: int3", then a panic.
	# That happens without rprof too (tests/harness/textpoke.sh: a shell
	# flipping scheduler static keys, no module loaded, oopsed in 3 of 3
	# runs within 18 s with QEMU 7.2, and after 137 s with 11.1) and not
	# in any run with one TCG thread.
	# See docs/distro-notes.md.
	RPROF_QEMU_EXTRA="${RPROF_QEMU_EXTRA:--accel tcg,thread=single}" \
	RPROF_VM_KERNEL=$kernel RPROF_VM_MODULE=$module RPROF_VM_BUSY_MODULE=$busy \
		step vm "$RPROF_TOP/tests/harness/vm.sh" check "$OUT" || true
	verdict --no-kunit "${checks[@]}" --console "$OUT/console.log" --results "$OUT/results.log"
else
	verdict
fi
