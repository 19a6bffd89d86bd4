#!/bin/bash
# Runs bench-vm-remote (a VM over a remote libvirt URI next to the same VM on the embedded
# driver) against a private libvirtd on loopback TCP playing the other machine
# (tests/vm/remote-libvirtd.sh). Exit 77 when that daemon cannot run here.
# Environment (set by meson): CORRAL_BUILD_DIR, CORRAL_SOURCE_DIR.
set -uo pipefail

# shellcheck source=tests/vm/remote-libvirtd.sh
. "${CORRAL_SOURCE_DIR:?}/tests/vm/remote-libvirtd.sh"
RUN=$(mktemp -d /tmp/corral-bench-remote.XXXXXX)
trap 'remote_libvirtd_stop; pkill -f "corral-chanbridge --uri ${REMOTE_URI/+/.}" 2>/dev/null; rm -rf "$RUN"' EXIT
if ! remote_libvirtd_start "$RUN"; then
	echo "SKIP: $REMOTE_WHY"
	exit 77
fi
CORRAL_BENCH_REMOTE_URI=$REMOTE_URI "${CORRAL_BUILD_DIR:?}/tests/bench/bench-vm-remote"
