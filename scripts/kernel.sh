#!/usr/bin/env bash
# Builds rprof's test kernel from Debian's linux-source-6.12 into the cache
# (see common.sh) and prints its directory.  The cache key is the source
# package version plus a hash of the configuration fragment and this script,
# so a changed fragment builds a new kernel and an unchanged one is reused.
. "$(dirname "$0")/common.sh"

"$RPROF_TOP/scripts/deps.sh"

KDIR=$(kernel_dir)
FRAGMENT=$RPROF_TOP/tests/kernel/rprof.config
if [ -f "$KDIR/.rprof-built" ] || [ -n "${RPROF_KDIR:-}" ]; then
	echo "$KDIR"
	exit 0
fi

mkdir -p "$KDIR"
if ! [ -f "$KDIR/Makefile" ]; then
	msg "extracting /usr/src/linux-source-6.12.tar.xz into $KDIR"
	tar -C "$KDIR" --strip-components=1 -xf /usr/src/linux-source-6.12.tar.xz
fi

cd "$KDIR"
msg "configuring (tinyconfig + tests/kernel/rprof.config)"
kmake -s tinyconfig >/dev/null
scripts/kconfig/merge_config.sh -m -O . .config "$FRAGMENT" >/dev/null
kmake -s olddefconfig >/dev/null
# Kconfig drops options whose dependencies are unmet without a word; say which.
dropped=()
while read -r line; do
	grep -qx -- "$line" .config || dropped+=("$line")
done < <(grep -E '^CONFIG_[A-Z0-9_]+=y$' "$FRAGMENT")
((${#dropped[@]} == 0)) || die "Kconfig dropped: ${dropped[*]} (see $KDIR/.config)"
kmake -s rustavailable >/dev/null || die "the kernel says Rust is not available with $KERNEL_RUSTC and $KERNEL_BINDGEN"

msg "building Linux $(kmake -s kernelversion) in $KDIR (a few minutes, once)"
jobs=$(($(nproc) + 1))
kmake -s -j"$jobs" >"$KDIR/build.log" 2>&1 || {
	tail -n 40 "$KDIR/build.log" >&2
	die "kernel build failed; full log: $KDIR/build.log"
}
kmake -s headers >/dev/null
touch .rprof-built
echo "$KDIR"
