#!/usr/bin/env bash
# The "Oops: int3" seen in make check-distro under multi-threaded TCG,
# reproduced without rprof (docs/distro-notes.md):
#   tests/harness/textpoke.sh [multi|single] [SECONDS]
# boots Debian sid's unmodified kernel (scripts/distro.sh) with QEMU's TCG
# in one thread per vCPU (multi, QEMU's default) or one for all (single)
# and flips scheduler static keys from a shell for SECONDS (150), no module
# loaded.  Says whether the kernel oopsed, and when; exits 1 if it did.
# Needs the static tools and workloads built (make check-distro does).
. "$(dirname "$0")/../../scripts/common.sh"

MODE=${1:-multi}
SECS=${2:-150}
case $MODE in
multi) accel="-accel tcg,thread=multi" ;;
single) accel="-accel tcg,thread=single" ;;
*) die "usage: $0 [multi|single] [SECONDS]" ;;
esac
OUT=$RPROF_BUILD/textpoke-$MODE
rm -rf "$OUT"
mkdir -p "$OUT"
"$RPROF_TOP/scripts/distro.sh" >"$OUT/distro.log" || die "scripts/distro.sh failed (see $OUT/distro.log)"
hook=$OUT/hook.sh
cat >"$hook" <<HOOK
#!/bin/sh
sed 's/@SECONDS@/$SECS/' "$RPROF_TOP/tests/harness/textpoke-guest.sh" >"\$1/tests/e2e/99-textpoke.sh"
HOOK
chmod +x "$hook"
RPROF_QEMU_EXTRA="$accel" RPROF_VM_HOOK=$hook RPROF_E2E=99-textpoke RPROF_VM_TIMEOUT=$((SECS + 240)) \
	RPROF_VM_KERNEL=$(sed -n 's/^kernel //p' "$OUT/distro.log") \
	RPROF_VM_MODULE=$(sed -n 's/^module //p' "$OUT/distro.log") \
	RPROF_VM_BUSY_MODULE=$(sed -n 's/^busy //p' "$OUT/distro.log") \
	"$RPROF_TOP/tests/harness/vm.sh" check "$OUT" || true
if oops=$(grep -m1 'Oops: int3' "$OUT/console.log"); then
	grep -m1 -A3 'Oops: int3' "$OUT/console.log" | sed 's/^/  /' >&2
	msg "$MODE TCG: ${oops# } (console: $OUT/console.log)"
	exit 1
fi
msg "$MODE TCG: no oops; $(sed -n 's/^ok 1 - //p' "$OUT/results.log")"
