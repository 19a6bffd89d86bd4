#!/bin/bash
# Build the standard guest image (unless cached), check its manifest, boot it with plain QEMU on
# a qcow2 overlay (the base must stay untouched), wait for corral-init's agent marker and for
# the Python/Node versions init prints in debug mode, then run `python3 -c 'print(6*7)'` (and
# git/node/curl) in the guest through the agent's virtio-serial port with a tiny protocol client.
#
# Environment:
#   CORRAL_AGENT_PATH    corral-agent binary (default: build/guest-image/agent/corral-agent)
#   CORRAL_BOOT_TIMEOUT  seconds to wait for the marker (default 180)
# Exit: 0 pass, 1 fail, 77 skip (no qemu, mmdebstrap or agent, or no subordinate ids as a user).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BUILDER=$TOP/guest-image/standard/build-standard
VERIFY=$TOP/guest-image/minimal/verify-manifest
TIMEOUT=${CORRAL_BOOT_TIMEOUT:-180}
MARKER='corral-init: agent started'

log() { echo "test-standard-image: $*" >&2; }
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
	if [ -f "${TMP:-}/console.log" ]; then
		log "console (last 30 lines):"
		tail -n 30 "$TMP/console.log" >&2
	fi
	exit 1
}

command -v qemu-system-x86_64 >/dev/null 2>&1 || skip "qemu-system-x86_64 not installed"
command -v qemu-img >/dev/null 2>&1 || skip "qemu-img not installed"
command -v mmdebstrap >/dev/null 2>&1 || skip "mmdebstrap not installed"
[ "$(id -u)" = 0 ] || grep -q "^$(id -un):" /etc/subuid 2>/dev/null ||
	skip "building the standard image as $(id -un) needs subordinate ids (/etc/subuid)"
AGENT=${CORRAL_AGENT_PATH:-$TOP/build/guest-image/agent/corral-agent}
[ -f "$AGENT" ] || skip "no agent binary at '$AGENT' (set CORRAL_AGENT_PATH)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/corral-test-standard.XXXXXX")
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

# 1. build (or reuse)
start=$(date +%s)
IMAGE=$("$BUILDER" --agent "$AGENT" 2>"$TMP/build.log") || {
	tail -n 30 "$TMP/build.log" >&2
	fail "build-standard failed"
}
log "image: $IMAGE (build/reuse took $(($(date +%s) - start)) s)"
grep -E '^\[[0-9]+/[0-9]+\] ' "$TMP/build.log" >/dev/null || fail "no [k/n] progress lines on stderr"
for f in vmlinuz initramfs.img disk.qcow2 manifest.json; do
	[ -s "$IMAGE/$f" ] || fail "image has no $f"
done
"$VERIFY" "$IMAGE" >/dev/null || fail "verify-manifest rejects the image"
python3 - "$IMAGE/manifest.json" <<'PY' || fail "manifest lacks spec/packages/boot"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["image"] == "standard" and m["inputs_hash"]
for p in ("python3", "git", "curl", "nodejs", "fuse3", "ca-certificates", "gcc", "make"):
    assert p in m["packages"], p
assert m["boot"]["disk"] == "disk.qcow2" and m["spec"]["user"]["uid"] == 1000
PY
base_sum=$(sha256sum "$IMAGE/disk.qcow2" | cut -d' ' -f1)
CMDLINE=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["boot"]["cmdline"])' "$IMAGE/manifest.json")

# 2. boot on an overlay
qemu-img create -q -f qcow2 -b "$IMAGE/disk.qcow2" -F qcow2 "$TMP/overlay.qcow2"
SOCK=$TMP/agent.sock
boot_start=$(date +%s%N)
qemu-system-x86_64 -machine q35,accel=tcg -m 1024 -smp 2 -nodefaults -no-user-config \
	-display none -serial "file:$TMP/console.log" \
	-kernel "$IMAGE/vmlinuz" -initrd "$IMAGE/initramfs.img" \
	-append "$CMDLINE corral.debug=1" \
	-drive "file=$TMP/overlay.qcow2,format=qcow2,if=virtio,cache=unsafe" \
	-device virtio-serial-pci \
	-chardev "socket,id=agent,path=$SOCK,server=on,wait=off" \
	-device virtserialport,chardev=agent,name=org.corral.agent.0 \
	-no-reboot </dev/null >"$TMP/qemu.log" 2>&1 &
QEMU_PID=$!

deadline=$(($(date +%s) + TIMEOUT))
while ! grep -q "$MARKER" "$TMP/console.log" 2>/dev/null; do
	kill -0 "$QEMU_PID" 2>/dev/null || fail "QEMU exited: $(cat "$TMP/qemu.log")"
	[ "$(date +%s)" -lt "$deadline" ] || fail "no '$MARKER' within ${TIMEOUT}s"
	sleep 0.2
done
boot_ms=$((($(date +%s%N) - boot_start) / 1000000))
log "agent started $boot_ms ms after QEMU started: $(grep -m1 "$MARKER" "$TMP/console.log" | tr -d '\r')"
grep -q 'Python 3\.' "$TMP/console.log" || fail "init did not print the Python version"
log "guest: $(grep -o 'Python 3[^,]*, v[0-9.]*' "$TMP/console.log" | head -n1)"
grep -q 'corral-stage1: error' "$TMP/console.log" && fail "stage 1 reported an error"

# 3. run Python in the guest through the agent: a minimal protocol client (proto/PROTOCOL.md)
cat >"$TMP/agent-exec.py" <<'PY'
import json, os, socket, struct, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
sock.settimeout(60)
buf = b""
def send(ftype, chan, payload, flags=0):
    sock.sendall(struct.pack(">BBBBII", 0xC0, 0x7A, ftype, flags, chan, len(payload)) + payload)
def frame():
    global buf
    while True:
        if len(buf) >= 12:
            m0, m1, t, fl, ch, ln = struct.unpack(">BBBBII", buf[:12])
            assert (m0, m1) == (0xC0, 0x7A), "bad magic"
            if len(buf) >= 12 + ln:
                p, buf = buf[12:12 + ln], buf[12 + ln:]
                return t, fl, ch, p
        d = sock.recv(65536)
        if not d:
            raise SystemExit("agent closed the connection")
        buf += d
nonce = os.urandom(16).hex()
send(1, 0, json.dumps({"version": 1, "min_version": 1, "role": "host", "nonce": nonce}).encode())
while True:
    t, fl, ch, p = frame()
    if t == 1 and json.loads(p).get("nonce") == nonce:
        break
send(2, 0, json.dumps({"id": 1, "method": "exec.start",
                       "params": {"argv": sys.argv[2:], "channel": 1}}).encode())
out = b""
while True:
    t, fl, ch, p = frame()
    if t == 3:
        r = json.loads(p)
        if "error" in r:
            raise SystemExit("exec.start: %s" % r["error"])
    elif t == 5 and ch == 1 and (fl & 3) == 1:
        out += p
    elif t == 5 and ch == 1 and (fl & 3) == 2:
        sys.stderr.buffer.write(p)
    elif t == 7:
        send(8, 0, p)
    elif t == 4:
        e = json.loads(p)
        if e.get("event") == "exec.exit":
            sys.stdout.buffer.write(out)
            sys.exit(e["params"].get("code", 128 + e["params"].get("signal", 0)))
PY
exec_start=$(date +%s%N)
out=$(timeout 60 python3 "$TMP/agent-exec.py" "$SOCK" python3 -c 'print(6*7)') ||
	fail "exec through the agent failed: $out"
[ "$out" = 42 ] || fail "python3 -c 'print(6*7)' printed '$out'"
log "python3 -c 'print(6*7)' in the guest through the agent: $out ($((($(date +%s%N) - exec_start) / 1000000)) ms)"
who=$(timeout 60 python3 "$TMP/agent-exec.py" "$SOCK" sh -c 'id -un; git --version; node --version; curl --version | head -n1') ||
	fail "running tools in the guest failed: $who"
log "in the guest: $(echo "$who" | tr '\n' ';')"

kill "$QEMU_PID" 2>/dev/null || true
wait "$QEMU_PID" 2>/dev/null || true
QEMU_PID=
[ "$(sha256sum "$IMAGE/disk.qcow2" | cut -d' ' -f1)" = "$base_sum" ] || fail "the base disk.qcow2 was modified"
log "PASS"
