# SPDX-License-Identifier: GPL-2.0
# rprof: top-level Makefile.  In-kernel-tree builds use Kbuild and Kconfig
# directly; this file drives the out-of-tree build, the test kernel and the
# tests.  `make help` lists the targets.

ifneq ($(KERNELRELEASE),)
# Invoked by Kbuild (which reads ./Kbuild first; this is a fallback).
include $(src)/Kbuild
else

KDIR ?= /lib/modules/$(shell uname -r)/build
RUSTC ?= /usr/bin/rustc
BINDGEN ?= $(firstword $(wildcard $(or $(RPROF_CACHE),$(HOME)/.cache/rprof)/bindgen-*/bin/bindgen) bindgen)
export RPROF_CACHE

.PHONY: all modules clean help vm-kernel vm-module check check-distro distro demo bench fuzz tools host-test clean-cache

all: modules

modules:
	@if ! [ -f "$(KDIR)/Makefile" ]; then \
		echo "rprof: no kernel build tree at KDIR=$(KDIR); build the test kernel with 'make vm-kernel' and use 'make check' / 'make demo', or pass KDIR=<a Rust-enabled 6.12 or 7.x build tree>"; exit 1; fi
	@if ! grep -qs '^CONFIG_RUST=y' "$(KDIR)/.config"; then \
		echo "rprof: the kernel at KDIR=$(KDIR) has no CONFIG_RUST=y; rprof needs a Rust-enabled kernel (README: Running rprof on your kernel)"; exit 1; fi
	@want=$$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT="\(.*\)"$$/\1/p' "$(KDIR)/.config"); \
	have=$$($(RUSTC) --version 2>/dev/null); \
	if [ -n "$$want" ] && [ "$$want" != "$$have" ]; then \
		echo "rprof: the kernel at KDIR=$(KDIR) was built with '$$want', RUSTC=$(RUSTC) is '$$have': pass RUSTC=<that rustc> or install it"; exit 1; fi
	@if ! [ -f "$(KDIR)/rust/libkernel.rmeta" ]; then \
		echo "rprof: the kernel at KDIR=$(KDIR) has no Rust metadata (rust/libkernel.rmeta); for a distribution's headers run scripts/rust-headers.sh first"; exit 1; fi
	$(MAKE) -C $(KDIR) M=$(CURDIR) RUSTC=$(RUSTC) BINDGEN=$(BINDGEN) $(if $(LLVM),LLVM=$(LLVM)) modules

# The test kernel, built once into the cache ($(HOME)/.cache/rprof).
vm-kernel:
	scripts/kernel.sh

# Release and KUnit modules against the test kernel, under build/.
vm-module:
	scripts/module.sh

tools:
	scripts/tools.sh

host-test:
	tests/harness/host.sh

check:
	tests/harness/check.sh

# The end-to-end suite on Debian sid's own Rust-enabled kernel.
check-distro:
	tests/harness/check-distro.sh

# rprof.ko for Debian sid's kernel, from a cached chroot (build/distro/).
distro:
	scripts/distro.sh

demo:
	tests/harness/demo.sh

bench:
	tests/harness/bench.sh

fuzz:
	tests/harness/fuzz.sh

clean:
	rm -rf build
	$(if $(wildcard $(KDIR)/Makefile),-$(MAKE) -C $(KDIR) M=$(CURDIR) clean)
	cd tools && cargo clean 2>/dev/null || true

clean-cache:
	rm -rf $(or $(RPROF_CACHE),$(HOME)/.cache/rprof)

help:
	@echo "make            build rprof.ko against KDIR (default: the running kernel)"
	@echo "make check      install what is missing, build, run every test suite"
	@echo "make demo       boot the test VM, load rprof and show what it does"
	@echo "make bench      slowdown under the floor, perf and rprof; rprof per stage (build/bench.json)"
	@echo "make fuzz       the call-sequence fuzzer alone in the VM, RPROF_FUZZ_SECONDS (600)"
	@echo "make vm-kernel  build (or reuse) the cached test kernel"
	@echo "make clean-cache  remove the cache (test kernel, bindgen)"

endif
