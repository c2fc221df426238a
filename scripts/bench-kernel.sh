#!/usr/bin/env bash
# Builds the benchmark kernel (`make bench`) into the cache and prints its
# directory: the same linux-source-6.12 tree and toolchain as the test
# kernel (scripts/kernel.sh), with tests/kernel/rprof.config minus the
# debug options tests/kernel/bench.config turns off.  Its own cache key
# (the generated fragment, this script, LLVM), so the test kernel's key
# and cache are never touched; built once, reused after that.
#   scripts/bench-kernel.sh            build if needed, print the directory
#   scripts/bench-kernel.sh --fragment print the generated fragment
. "$(dirname "$0")/common.sh"

BASE=$RPROF_TOP/tests/kernel/rprof.config
OVERRIDES=$RPROF_TOP/tests/kernel/bench.config

# Options bench.config turns off ("# CONFIG_X is not set"), one a line.
off_options() {
	sed -n 's/^# \(CONFIG_[A-Z0-9_]*\) is not set$/\1/p' "$OVERRIDES"
}

# rprof.config without the lines that name an option bench.config turns
# off, then bench.config.
fragment() {
	grep -v -w -F -f <(off_options) "$BASE"
	cat "$OVERRIDES"
}

if [ "${1:-}" = --fragment ]; then
	fragment
	exit 0
fi

"$RPROF_TOP/scripts/deps.sh"

ver=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null) ||
	die "linux-source-6.12 is not installed (run scripts/deps.sh)"
hash=$( (fragment; cat "$0"; echo "LLVM=$RPROF_LLVM") | sha256sum | cut -c1-12)
KDIR=$RPROF_CACHE/linux-bench-$ver-$hash
if [ -f "$KDIR/.rprof-built" ]; then
	echo "$KDIR"
	exit 0
fi

mkdir -p "$KDIR"
if ! [ -f "$KDIR/Makefile" ]; then
	msg "extracting /usr/src/linux-source-6.12.tar.xz into $KDIR"
	tar -C "$KDIR" --strip-components=1 -xf /usr/src/linux-source-6.12.tar.xz
fi

cd "$KDIR"
fragment >bench.fragment
msg "configuring the benchmark kernel (tinyconfig + rprof.config - debug options)"
kmake -s tinyconfig >/dev/null
scripts/kconfig/merge_config.sh -m -O . .config bench.fragment >/dev/null
kmake -s olddefconfig >/dev/null

# Everything rprof asked for is there...
dropped=()
while read -r line; do
	grep -qx -- "$line" .config || dropped+=("$line")
done < <(grep -E '^CONFIG_[A-Z0-9_]+=y$' bench.fragment)
((${#dropped[@]} == 0)) || die "Kconfig dropped: ${dropped[*]} (see $KDIR/.config)"
# ...and no checker came back through a select.
still_on=()
for opt in $(off_options) CONFIG_LOCKDEP CONFIG_DEBUG_LOCK_ALLOC CONFIG_DEBUG_SPINLOCK \
	CONFIG_DEBUG_MUTEXES CONFIG_TRACE_IRQFLAGS CONFIG_PROVE_RCU CONFIG_DEBUG_PREEMPT; do
	! grep -q "^$opt=y" .config || still_on+=("$opt")
done
((${#still_on[@]} == 0)) || die "still on in the benchmark kernel: ${still_on[*]} (see $KDIR/.config)"
kmake -s rustavailable >/dev/null || die "the kernel says Rust is not available with $KERNEL_RUSTC and $KERNEL_BINDGEN"

msg "building the benchmark kernel, Linux $(kmake -s kernelversion), in $KDIR (several minutes, once)"
jobs=$(($(nproc) + 1))
kmake -s -j"$jobs" >"$KDIR/build.log" 2>&1 || {
	tail -n 40 "$KDIR/build.log" >&2
	die "benchmark kernel build failed; full log: $KDIR/build.log"
}
kmake -s headers >/dev/null
touch .rprof-built
echo "$KDIR"
