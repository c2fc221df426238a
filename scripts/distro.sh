#!/usr/bin/env bash
# rprof.ko for a distribution's own Rust-enabled kernel: Debian sid's
# Linux 7.2 first (issue 13).  Prints the paths of the module and of the
# distribution's unmodified kernel image.
#
#   scripts/distro.sh            chroot, Rust metadata, module, image
#   scripts/distro.sh --prepare  only make the headers usable for Rust
#                                modules (what a DKMS build needs first)
#   scripts/distro.sh --dkms     install rprof with DKMS in the chroot
#
# A distribution's headers package has no Rust metadata (rust/*.rmeta,
# libmacros.so), so out-of-tree Rust modules cannot be built from it
# alone.  scripts/rust-headers.sh makes it, here in a chroot of the
# distribution (cached under $RPROF_CACHE, keyed by suite and kernel
# release, so a second run takes seconds), and checks that the chroot's
# rustc is exactly the kernel's (the module's Rust symbols must match).
#
# Settings: RPROF_DISTRO_SUITE (sid), RPROF_DISTRO_MIRROR
# (http://deb.debian.org/debian), RPROF_DISTRO_KREL (7.2.13+deb14-amd64),
# RPROF_DISTRO_KSRC (linux-source-7.2).
. "$(dirname "$0")/common.sh"

SUITE=${RPROF_DISTRO_SUITE:-sid}
MIRROR=${RPROF_DISTRO_MIRROR:-http://deb.debian.org/debian}
KREL=${RPROF_DISTRO_KREL:-7.2.13+deb14-amd64}
KSRC=${RPROF_DISTRO_KSRC:-linux-source-7.2}
BASE=$RPROF_CACHE/distro-$SUITE-$KREL
ROOT=$BASE/root
OUTD=$RPROF_BUILD/distro
HEADERS=/usr/src/linux-headers-$KREL
# The mirror is a snapshot whose Release file has expired.
APT=(-o Acquire::Check-Valid-Until=false -o Acquire::Retries=3)
PACKAGES=(rustc rust-src bindgen gcc make libelf-dev libssl-dev openssl bc flex bison
	cpio kmod python3 xz-utils dkms "$KSRC" "linux-headers-$KREL")

# Commands in the chroot see /proc (objtool reads limits there) and /dev.
mounted=()
mount_root() {
	local d
	for d in proc dev; do
		mountpoint -q "$ROOT/$d" && continue
		if [ $d = proc ]; then mount -t proc proc "$ROOT/proc"; else mount --bind /dev "$ROOT/dev"; fi
		mounted+=("$ROOT/$d")
	done
}
unmount_root() {
	local d
	for d in "${mounted[@]}"; do umount "$d" 2>/dev/null || umount -l "$d" 2>/dev/null || true; done
}
trap unmount_root EXIT
in_root() { chroot "$ROOT" env LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

# kernel_moved prints one line, and succeeds, when the mirror no longer
# has the kernel's headers or source package: what it has instead and
# how to build for that.
kernel_moved() {
	local have src
	in_root apt-cache show "linux-headers-$KREL" >/dev/null 2>&1 &&
		in_root apt-cache show "$KSRC" >/dev/null 2>&1 && return 1
	have=$(in_root apt-cache search --names-only '^linux-headers-[0-9][0-9.]*[+]deb[0-9]*-amd64$' |
		sed 's/ .*//; s/^linux-headers-//' | sort -V | tail -n 1)
	src=$(in_root apt-cache search --names-only '^linux-source-[0-9][0-9.]*$' | sed 's/ .*//' | sort -V | tail -n 1)
	echo "$SUITE no longer has linux-headers-$KREL or $KSRC: the distribution moved on${have:+ to $have}; set RPROF_DISTRO_KREL=${have:-...} RPROF_DISTRO_KSRC=${src:-...} to build for it"
}

make_root() {
	if [ -f "$ROOT/.rprof-ready" ]; then
		# Packages added to the list since the chroot was made.
		[ "$(cat "$ROOT/.rprof-ready")" = "${PACKAGES[*]}" ] && return
		mount_root
		in_root apt-get "${APT[@]}" install -y --no-install-recommends "${PACKAGES[@]}" >>"$BASE/apt.log" 2>&1 ||
			die "installing ${PACKAGES[*]} failed (see $BASE/apt.log)"
		echo "${PACKAGES[*]}" >"$ROOT/.rprof-ready"
		return
	fi
	command -v debootstrap >/dev/null || {
		msg "installing debootstrap"
		apt-get install -y debootstrap >/dev/null
	}
	msg "debootstrap $SUITE from $MIRROR into $ROOT (about a minute, once)"
	rm -rf "$ROOT"
	mkdir -p "$BASE"
	debootstrap --variant=buildd "$SUITE" "$ROOT" "$MIRROR" >"$BASE/debootstrap.log" 2>&1 ||
		die "debootstrap failed (see $BASE/debootstrap.log)"
	mount_root
	in_root apt-get "${APT[@]}" update >"$BASE/apt.log" 2>&1 || die "apt-get update failed (see $BASE/apt.log)"
	local moved
	moved=$(kernel_moved) && die "$moved"
	in_root apt-get "${APT[@]}" install -y --no-install-recommends "${PACKAGES[@]}" >>"$BASE/apt.log" 2>&1 ||
		die "installing ${PACKAGES[*]} in the $SUITE chroot failed (see $BASE/apt.log)"
	echo "${PACKAGES[*]}" >"$ROOT/.rprof-ready"
}

# What the chroot holds, for the record: $BASE/versions, and one line.
record_versions() {
	in_root dpkg-query -W -f '${Package} ${Version}\n' rustc rust-src bindgen gcc \
		"$KSRC" "linux-headers-$KREL" >"$BASE/versions" 2>/dev/null || true
	msg "chroot: $(tr '\n' ' ' <"$BASE/versions")"
}

# The Rust metadata of the headers tree (once): scripts/rust-headers.sh
# in the chroot, which also checks rustc against the kernel's.
prepare_headers() {
	cp "$RPROF_TOP/scripts/rust-headers.sh" "$ROOT/rprof-rust-headers.sh"
	local err
	if ! in_root bash /rprof-rust-headers.sh "$KREL" >"$BASE/prepare.log" 2>&1; then
		# Its own verdict in one line (rustc not the kernel's, ...), or
		# the end of the kernel build's output.
		err=$(sed -n 's/^rust-headers: error: //p' "$BASE/prepare.log" | tail -n 1)
		[ -n "$err" ] || tail -n 5 "$BASE/prepare.log" >&2
		die "${err:-preparing the headers of $KREL failed} (see $BASE/prepare.log)"
	fi
	sed -n 's/^rust-headers: /[rprof] /p' "$BASE/prepare.log" >&2
}

build_module() {
	msg "building rprof.ko for $KREL"
	rm -rf "$ROOT/build/rprof"
	mkdir -p "$ROOT/build/rprof" "$OUTD"
	cp -r "$RPROF_TOP/src" "$RPROF_TOP/include" "$RPROF_TOP/Kbuild" "$ROOT/build/rprof/"
	in_root make -C "$HEADERS" M=/build/rprof modules >"$OUTD/build.log" 2>&1 ||
		{ tail -n 40 "$OUTD/build.log" >&2; die "the module build failed (see $OUTD/build.log)"; }
	cp "$ROOT/build/rprof/rprof.ko" "$OUTD/rprof.ko"
	# The end-to-end suite's busy test module, for this kernel too.
	rm -rf "$ROOT/build/busymod"
	mkdir -p "$ROOT/build/busymod" "$OUTD/busymod"
	cp "$RPROF_TOP/tests/workloads/busymod/rprof_busy.c" "$RPROF_TOP/tests/workloads/busymod/rprof_mmhold.c" \
		"$RPROF_TOP/tests/workloads/busymod/Kbuild" "$ROOT/build/busymod/"
	in_root make -C "$HEADERS" M=/build/busymod modules >"$OUTD/busymod/build.log" 2>&1 ||
		{ tail -n 20 "$OUTD/busymod/build.log" >&2; die "rprof_busy.ko failed to build (see $OUTD/busymod/build.log)"; }
	cp "$ROOT/build/busymod/rprof_busy.ko" "$ROOT/build/busymod/rprof_mmhold.ko" "$OUTD/busymod/"
	in_root modinfo -F vermagic /build/rprof/rprof.ko | grep -q "^$KREL " ||
		die "rprof.ko's vermagic is not $KREL"
}

# The distribution's own kernel image, unmodified.
kernel_image() {
	[ -f "$BASE/vmlinuz" ] && return
	msg "fetching linux-binary-$KREL (the kernel image)"
	rm -rf "$ROOT/tmp/image" && mkdir -p "$ROOT/tmp/image"
	in_root sh -c "cd /tmp/image && apt-get ${APT[*]} download linux-binary-$KREL" >"$BASE/image.log" 2>&1 ||
		die "cannot download linux-binary-$KREL (see $BASE/image.log)"
	dpkg-deb -x "$ROOT"/tmp/image/*.deb "$ROOT/tmp/image/x"
	# Newer packages keep the image beside the modules, older ones in /boot.
	cp "$ROOT/tmp/image/x/usr/lib/modules/$KREL/vmlinuz" "$BASE/vmlinuz" 2>/dev/null ||
		cp "$ROOT/tmp/image/x/boot/vmlinuz-$KREL" "$BASE/vmlinuz" ||
		die "no vmlinuz in linux-binary-$KREL"
	rm -rf "$ROOT/tmp/image"
}

# DKMS as a user would run it, in the chroot: the tree in
# /usr/src/rprof-VERSION, dkms add, build (its pre-build step is
# scripts/rust-headers.sh), install; the installed module must be for
# KREL and signed with DKMS's machine-owner key.
dkms_check() {
	local ver dst ko
	ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$RPROF_TOP/dkms.conf")
	dst=$ROOT/usr/src/rprof-$ver
	rm -rf "$dst"
	mkdir -p "$dst"
	cp -r "$RPROF_TOP"/{src,include,scripts,Kbuild,Kconfig,Makefile,dkms.conf} "$dst/"
	in_root dkms remove "rprof/$ver" --all >/dev/null 2>&1 || true
	in_root sh -c "dkms add rprof/$ver && dkms build rprof/$ver -k $KREL && dkms install --force rprof/$ver -k $KREL" \
		>"$OUTD/dkms.log" 2>&1 || { tail -n 20 "$OUTD/dkms.log" >&2; die "dkms failed (see $OUTD/dkms.log)"; }
	ko=/lib/modules/$KREL/updates/dkms/rprof.ko
	[ -f "$ROOT$ko" ] || ko=$ko.xz
	in_root modinfo -F vermagic "$ko" | grep -q "^$KREL " || die "dkms installed no rprof.ko for $KREL"
	in_root modinfo -F signer "$ko" | grep -q . || die "the module dkms installed is not signed"
	msg "dkms: rprof/$ver built, signed ($(in_root modinfo -F signer "$ko")) and installed for $KREL"
}

t0=$SECONDS
mkdir -p "$OUTD" "$BASE"
# One run at a time per chroot: it is shared by every checkout (and
# worktree) on the machine, and runs share its /build and its mounts.
exec 9>"$BASE/lock"
flock -n 9 || {
	msg "waiting for another scripts/distro.sh using $BASE"
	flock 9
}
make_root
mount_root
record_versions
prepare_headers
[ "${1:-}" = --prepare ] && exit 0
if [ "${1:-}" = --dkms ]; then
	dkms_check
	exit 0
fi
build_module
kernel_image
msg "done in $((SECONDS - t0)) s"
echo "module $OUTD/rprof.ko"
echo "busy $OUTD/busymod/rprof_busy.ko"
echo "kernel $BASE/vmlinuz"
echo "release $KREL"
echo "config $ROOT$HEADERS/.config"
