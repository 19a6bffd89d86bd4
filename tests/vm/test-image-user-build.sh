#!/bin/bash
# An image built by an ordinary user, as a person with sudo would build the standard or desktop
# image: build-standard re-executes itself in a user namespace of the user's own (their
# subordinate ids as the image's other users). A fresh user (useradd gives them subordinate
# ids) builds a small spec; the image lands in their cache, owned by them, its manifest
# verified; inside its file system root's files are root's, the image user's home is theirs
# (uid 1000), /etc/shadow is root:shadow and su is setuid root; booted by that user with
# corralctl, the guest sees the same.
#
# Environment (set by meson): CORRAL_BUILD_DIR, CORRAL_SOURCE_DIR.
# Exit: 0 pass, 1 fail, 77 skip (not root here: it makes a user; no QEMU, mmdebstrap or
# newuidmap; unless CORRAL_REQUIRE_VM=1).
set -uo pipefail

log() { echo "test-image-user-build: $*" >&2; }
fail() {
	log "FAIL: $*"
	exit 1
}
skip() {
	if [ "${CORRAL_REQUIRE_VM:-}" = 1 ]; then fail "VMs are required here: $*"; fi
	log "SKIP: $*"
	exit 77
}

BUILD=${CORRAL_BUILD_DIR:?}
SRC=${CORRAL_SOURCE_DIR:?}
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed"
command -v mmdebstrap >/dev/null || skip "mmdebstrap not installed"
command -v newuidmap >/dev/null || skip "newuidmap not installed (package uidmap)"
command -v debugfs >/dev/null || skip "debugfs not installed (package e2fsprogs)"
[ "$(id -u)" = 0 ] || skip "this test makes a user of its own: run it as root"

USER_NAME=corral-ubuild-$$
WORK=$(mktemp -d /tmp/corral-user-build.XXXXXX)
cleanup() {
	if id "$USER_NAME" >/dev/null 2>&1; then
		su -s /bin/bash "$USER_NAME" -c "cd && XDG_RUNTIME_DIR=$WORK/run $BIN/corralctl vm destroy ub; XDG_RUNTIME_DIR=$WORK/run $BIN/corralctl vm rm ub" >/dev/null 2>&1
		pkill -u "$USER_NAME" 2>/dev/null
		sleep 0.5
		# What the namespace made (owned by subordinate ids) goes with root.
		userdel -r "$USER_NAME" >/dev/null 2>&1
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
useradd -m -s /bin/bash "$USER_NAME" || fail "useradd"
grep -q "^$USER_NAME:" /etc/subuid || skip "useradd gave $USER_NAME no subordinate ids here"

# What the user runs, where they can read it (a build tree may be in root's home).
BIN=$WORK/bin
mkdir -p "$BIN" "$WORK/run"
cp -r "$SRC/guest-image" "$WORK/guest-image"
cp "$BUILD/guest-image/agent/corral-agent" "$BUILD/mounts/client/corral-fs" \
	"$BUILD/keychain-bridge/guest/corral-netproxy" "$BUILD/app/corralctl" \
	"$BUILD/mounts/server/corral-fsd" "$BUILD/keychain-bridge/corral-egressd" "$BIN/"
cat >"$WORK/spec.json" <<'JSON'
{"name": "ubuild", "description": "a small image built by an ordinary user (test)",
 "suite": "bookworm", "variant": "apt", "packages": ["bash"],
 "hostname": "corral",
 "user": {"name": "corral", "uid": 1000, "gid": 1000, "home": "/home/corral", "shell": "/bin/bash"},
 "files": [{"path": "/etc/ubuild.txt", "mode": "0640", "content": "built by a user\n"}],
 "ca_certificates": [], "free_space_mb": 64}
JSON
chown -R "$USER_NAME:" "$WORK"
chmod 0755 "$WORK"
as_user() { su -s /bin/bash "$USER_NAME" -c "cd && export XDG_RUNTIME_DIR=$WORK/run CORRAL_AGENT_PATH=$BIN/corral-agent CORRAL_FS_PATH=$BIN/corral-fs CORRAL_NETPROXY_PATH=$BIN/corral-netproxy CORRAL_FSD_PATH=$BIN/corral-fsd CORRAL_EGRESSD_PATH=$BIN/corral-egressd && $1"; }

log "building as $USER_NAME ($(grep "^$USER_NAME:" /etc/subuid))"
start=$(date +%s)
image=$(as_user "$WORK/guest-image/standard/build-standard --agent $BIN/corral-agent --spec $WORK/spec.json" 2>"$WORK/build.log") ||
	fail "the build failed: $(tail -20 "$WORK/build.log")"
log "built $image in $(($(date +%s) - start)) s"
home=$(getent passwd "$USER_NAME" | cut -d: -f6)
case $image in "$home"/.cache/corral/images/ubuild-*) ;; *) fail "the image is not in the user's cache: $image" ;; esac
owner=$(stat -c %U "$image/disk.qcow2")
[ "$owner" = "$USER_NAME" ] || fail "the image belongs to $owner"
"$WORK/guest-image/minimal/verify-manifest" "$image" >/dev/null || fail "verify-manifest refuses the image"

log "ownership inside the file system"
qemu-img convert -O raw "$image/disk.qcow2" "$WORK/disk.raw" || fail "qemu-img convert"
inside() {
	debugfs -R "stat $1" "$WORK/disk.raw" 2>/dev/null | awk '
		/Mode:/ { for (i = 1; i < NF; i++) if ($i == "Mode:") m = $(i + 1) }
		/User:/ { u = $2; g = $4 }
		END { print u ":" g " " m }'
}
got="/ $(inside /); /usr/bin/su $(inside /usr/bin/su); /etc/shadow $(inside /etc/shadow); /home/corral $(inside /home/corral); /etc/ubuild.txt $(inside /etc/ubuild.txt)"
log "$got"
want="/ 0:0 0755; /usr/bin/su 0:0 04755; /etc/shadow 0:42 0640; /home/corral 1000:1000 0755; /etc/ubuild.txt 0:0 0640"
[ "$got" = "$want" ] || fail "ownership or modes differ: want $want"
rm -f "$WORK/disk.raw"

log "booting it as $USER_NAME"
out=$(as_user "$BIN/corralctl vm create --image ubuild ub" 2>&1) || fail "vm create: $out"
out=$(as_user "$BIN/corralctl exec ub -- stat -c '%u:%g %a %n' /usr/bin/su /etc/shadow /home/corral /etc/ubuild.txt" 2>&1) ||
	fail "exec: $out"
log "in the guest: $(tr '\n' ';' <<<"$out")"
[ "$(tr '\n' ';' <<<"$out")" = "0:0 4755 /usr/bin/su;0:42 640 /etc/shadow;1000:1000 755 /home/corral;0:0 640 /etc/ubuild.txt;" ] ||
	fail "the guest sees other owners"
log "ok"
