#!/usr/bin/env bash
# Makes a distribution kernel's headers usable for out-of-tree Rust modules
# such as rprof, on the machine that runs that kernel (or in a chroot of
# its distribution: scripts/distro.sh).  Also DKMS's pre-build step.
#
#   scripts/rust-headers.sh [KERNELRELEASE]     (default: uname -r)
#
# Debian's linux-headers packages carry no Rust metadata (rust/*.rmeta,
# libmacros.so, scripts/target.json).  They are made here from the
# kernel's own source package (linux-source-MAJOR.MINOR, its tarball in
# /usr/src): configured with the headers' .config, `make prepare
# modules_prepare`, then copied into /usr/src/linux-headers-RELEASE.
# The module's Rust symbol names depend on the exact rustc, so rustc must
# be the one named in the kernel's CONFIG_RUSTC_VERSION_TEXT; this script
# stops and says which otherwise.  Nothing is done when the metadata is
# already there.  One to three minutes on 2 cores.
set -euo pipefail

KREL=${1:-$(uname -r)}
H=/usr/src/linux-headers-$KREL
die() { printf 'rust-headers: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'rust-headers: %s\n' "$*" >&2; }

[ -f "$H/.config" ] || die "no $H: install linux-headers-$KREL"
grep -q '^CONFIG_RUST=y' "$H/.config" ||
	die "$KREL was built without Rust (CONFIG_RUST is off): no Rust module can load into it; use a Rust-enabled kernel (Debian sid's 7.2 is one)"
# Checked on every run, metadata or not: a module built by another rustc
# has Rust symbol names the kernel does not export, and will not load.
want=$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT="\(.*\)"$/\1/p' "$H/.config")
have=$(rustc --version 2>/dev/null || echo "no rustc")
[ "$want" = "$have" ] ||
	die "$KREL was built with '$want', this system has '$have': install that rustc and rust-src (on Debian: apt-get install rustc rust-src from the distribution that built the kernel)"
command -v bindgen >/dev/null || die "no bindgen: apt-get install bindgen"
say "$have is the kernel's rustc"
# The metadata describes one configuration, symbol table and rustc: made
# again when any of them changed (a rebuilt headers package keeps its
# release name).
stamp=$( { cat "$H/.config" "$H/Module.symvers" 2>/dev/null; echo "$have"; } | sha256sum | cut -c1-16)
[ -f "$H/rust/libkernel.rmeta" ] && [ -f "$H/scripts/target.json" ] &&
	[ "$(cat "$H/rust/.rprof-stamp" 2>/dev/null)" = "$stamp" ] && exit 0

series=$(echo "$KREL" | cut -d. -f1-2)
tarball=/usr/src/linux-source-$series.tar.xz
[ -f "$tarball" ] || die "no $tarball: apt-get install linux-source-$series"
# The source must be the kernel's own: metadata made from another release
# would describe other structure layouts than the kernel has.
if hv=$(dpkg-query -W -f='${Version}' "linux-headers-$KREL" 2>/dev/null) &&
	sv=$(dpkg-query -W -f='${Version}' "linux-source-$series" 2>/dev/null); then
	[ "$hv" = "$sv" ] ||
		die "linux-source-$series is $sv but linux-headers-$KREL is $hv: install the matching source (apt-get install linux-source-$series=$hv)"
fi

work=$(mktemp -d /var/tmp/rprof-rust-headers.XXXXXX)
trap 'rm -rf "$work"' EXIT
say "making the Rust metadata of $KREL from $tarball (a minute or two)"
tar -C "$work" -xf "$tarball"
src=$work/linux-source-$series
kv=$(make -s -C "$src" kernelversion)
case $KREL in
"$kv" | "$kv"[!0-9]*) ;;
*) die "$tarball holds Linux $kv, not the $KREL kernel's release: install the matching linux-source" ;;
esac
cp "$H/.config" "$src/.config"
[ ! -f "$H/Module.symvers" ] || cp "$H/Module.symvers" "$src/Module.symvers"
# The kernel's own compiler, by the name that built it: Debian's is
# x86_64-linux-gnu-gcc-16, and plain `gcc` (the same compiler) would
# still change CONFIG_CC_VERSION_TEXT.
kmake=(make -s -C "$src" KERNELRELEASE="$KREL")
if grep -q '^CONFIG_CC_IS_CLANG=y' "$H/.config"; then
	kmake+=(LLVM=1)
else
	cc=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\([^" ]*\) .*/\1/p' "$H/.config")
	command -v "$cc" >/dev/null || die "$KREL was built by $cc, which is not installed: install it (gcc-N)"
	kmake+=(CC="$cc")
fi
"${kmake[@]}" olddefconfig
# The same configuration, or the metadata would describe another kernel
# (a missing tool, openssl say, can turn options off).
grep '^CONFIG' "$H/.config" | sort >"$work/want.cfg"
grep '^CONFIG' "$src/.config" | sort >"$work/have.cfg"
if ! cmp -s "$work/want.cfg" "$work/have.cfg"; then
	diff "$work/want.cfg" "$work/have.cfg" >&2 || true
	die "the source's configuration differs from $KREL's (above): install what the differing options need (openssl, libelf-dev, ...)"
fi
"${kmake[@]}" -j"$(nproc)" prepare modules_prepare
mkdir -p "$H/rust"
rm -f "$H"/rust/*.rmeta "$H"/rust/*.so "$H/rust/.rprof-stamp"
cp "$src"/rust/*.rmeta "$src"/rust/*.so "$H/rust/"
cp "$src/scripts/target.json" "$H/scripts/"
echo "$stamp" >"$H/rust/.rprof-stamp"
say "done: $H can build Rust modules"
