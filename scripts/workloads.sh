#!/usr/bin/env bash
# Test workloads for the guest (placeholder until the workloads land):
#   workloads.sh build          builds them under build/workloads
#   workloads.sh install ROOT   copies them into the initramfs tree ROOT
. "$(dirname "$0")/common.sh"
case "${1:-}" in
build) mkdir -p "$RPROF_BUILD/workloads" ;;
install) mkdir -p "${2:?root}/tests/bin" ;;
*) die "usage: workloads.sh build|install ROOT" ;;
esac
