#!/bin/bash
# Build the minimal guest image, check its manifest (and that tampering is
# caught), boot it with plain QEMU and wait for corral-init's agent marker.
#
# Environment:
#   CORRAL_AGENT_PATH  corral-agent binary to put in the image
#                      (default: build/guest-image/agent/corral-agent)
#   CORRAL_BOOT_TIMEOUT  seconds to wait for the marker (default 120)
#   CORRAL_QEMU_ACCEL  QEMU accelerator (default tcg: on the test machines
#                      /dev/kvm exists but a KVM guest hangs in early boot)
# Exit: 0 pass, 1 fail, 77 skip (no qemu-system-x86_64, no agent binary).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BUILDER=$TOP/guest-image/minimal/build-minimal
VERIFY=$TOP/guest-image/minimal/verify-manifest
TIMEOUT=${CORRAL_BOOT_TIMEOUT:-120}
MARKER='corral-init: agent started'
PORT=org.corral.agent.0

log() { echo "test-minimal-image: $*" >&2; }
skip() {
	# Where VMs are expected to run (tools/test), not running them is a failure.
	if [ "${CORRAL_REQUIRE_VM:-}" = 1 ]; then
		log "FAIL: VMs are required here (CORRAL_REQUIRE_VM=1): $*"
		exit 1
	fi
	log "SKIP: $*"
	exit 77
}
fail() {
	log "FAIL: $*"
	exit 1
}

command -v qemu-system-x86_64 >/dev/null 2>&1 || skip "qemu-system-x86_64 not installed"
AGENT=${CORRAL_AGENT_PATH:-$TOP/build/guest-image/agent/corral-agent}
[ -f "$AGENT" ] || skip "no agent binary at '$AGENT' (set CORRAL_AGENT_PATH)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/corral-test-minimal.XXXXXX")
QEMU_PID=
cleanup() {
	if [ -n "$QEMU_PID" ]; then
		kill "$QEMU_PID" 2>/dev/null || true
		wait "$QEMU_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. build (or reuse the cached image)
log "building the image (agent: $AGENT)"
IMAGE=$("$BUILDER" --agent "$AGENT") || fail "build-minimal failed"
for f in vmlinuz initramfs.img manifest.json; do
	[ -s "$IMAGE/$f" ] || fail "image $IMAGE has no $f"
done
log "image: $IMAGE ($(du -h "$IMAGE/initramfs.img" | cut -f1) initramfs, $(du -h "$IMAGE/vmlinuz" | cut -f1) kernel)"

# A second run must reuse the cached image and be quick.
start=$(date +%s%N)
IMAGE2=$("$BUILDER" --agent "$AGENT" 2>/dev/null) || fail "second build-minimal run failed"
[ "$IMAGE2" = "$IMAGE" ] || fail "second run gave another image: $IMAGE2"
log "cached rebuild check took $((($(date +%s%N) - start) / 1000000)) ms"

# 2. manifest
"$VERIFY" "$IMAGE" >/dev/null || fail "verify-manifest rejects a fresh image"
python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); assert m["image"] == "minimal" and m["inputs_hash"] and m["agent_sha256"]' \
	"$IMAGE/manifest.json" || fail "manifest.json lacks image/inputs_hash/agent_sha256"
expected_agent=$(sha256sum "$AGENT" | cut -d' ' -f1)
grep -q "\"agent_sha256\": \"$expected_agent\"" "$IMAGE/manifest.json" ||
	fail "manifest agent_sha256 is not the sha256 of $AGENT"

# 3. tampering is caught, naming the file
mkdir "$TMP/copy"
cp "$IMAGE/vmlinuz" "$IMAGE/initramfs.img" "$IMAGE/manifest.json" "$TMP/copy/"
"$VERIFY" "$TMP/copy" >/dev/null || fail "verify-manifest rejects an untouched copy"
# Flip every bit of one byte: writing a fixed value would change nothing, one time in
# 256, when the image already held that value there.
python3 -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(4096); b = f.read(1); f.seek(4096); f.write(bytes([b[0] ^ 0xFF]))' "$TMP/copy/initramfs.img"
if "$VERIFY" "$TMP/copy" 2>"$TMP/verify.err"; then
	fail "verify-manifest accepted a tampered initramfs.img"
fi
grep -q 'initramfs.img' "$TMP/verify.err" || fail "verify-manifest did not name initramfs.img: $(cat "$TMP/verify.err")"
cp "$IMAGE/initramfs.img" "$TMP/copy/"
rm "$TMP/copy/vmlinuz"
if "$VERIFY" "$TMP/copy" 2>"$TMP/verify.err"; then
	fail "verify-manifest accepted a missing vmlinuz"
fi
grep -q 'vmlinuz' "$TMP/verify.err" || fail "verify-manifest did not name vmlinuz: $(cat "$TMP/verify.err")"
log "manifest verification and tamper detection ok"

# 4. boot with plain QEMU, console to a file, agent channel on a unix socket
accel=${CORRAL_QEMU_ACCEL:-tcg}
console=$TMP/console.log
: >"$console"
start=$(date +%s%N)
# timeout(1) as a last resort: QEMU must never outlive this test.
timeout $((TIMEOUT + 60)) qemu-system-x86_64 \
	-machine "q35,accel=$accel" -m 512 -smp 2 \
	-nodefaults -no-user-config -display none \
	-chardev file,id=con,path="$console" -serial chardev:con \
	-kernel "$IMAGE/vmlinuz" -initrd "$IMAGE/initramfs.img" \
	-append 'console=ttyS0 quiet panic=-1 corral.debug=1' \
	-device virtio-serial-pci \
	-chardev socket,id=agent,path="$TMP/agent.sock",server=on,wait=off \
	-device virtserialport,chardev=agent,name=$PORT \
	-no-reboot </dev/null >"$TMP/qemu.log" 2>&1 &
QEMU_PID=$!

deadline=$(($(date +%s) + TIMEOUT))
while ! grep -q "$MARKER" "$console"; do
	if ! kill -0 "$QEMU_PID" 2>/dev/null; then
		log "console:"
		sed 's/^/    /' "$console" >&2
		sed 's/^/    qemu: /' "$TMP/qemu.log" >&2
		fail "QEMU exited before the marker line"
	fi
	if [ "$(date +%s)" -ge "$deadline" ]; then
		log "console:"
		sed 's/^/    /' "$console" >&2
		fail "no '$MARKER' within ${TIMEOUT}s"
	fi
	sleep 0.05
done
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
log "marker after ${elapsed_ms} ms ($accel): $(grep -m1 "$MARKER" "$console")"
sleep 0.3 # let the debug lines around the marker land
grep -q "/dev/virtio-ports:.*$PORT" "$console" ||
	fail "guest has no /dev/virtio-ports/$PORT: $(grep 'virtio-ports' "$console" || echo 'no listing')"
grep -q "$MARKER (pid [0-9]*, --serial /dev/virtio-ports/$PORT" "$console" ||
	fail "agent not started on the virtio-serial port: $(grep -m1 "$MARKER" "$console")"
if grep -q 'corral-init: warning' "$console"; then
	log "guest warnings: $(grep 'corral-init: warning' "$console" | tr '\n' ' ')"
fi

kill "$QEMU_PID" 2>/dev/null || true
wait "$QEMU_PID" 2>/dev/null || true
QEMU_PID=
log "PASS"
