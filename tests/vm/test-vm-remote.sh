#!/bin/bash
# VMs over a remote libvirt URI, through corralctl as a person would use them: a private libvirtd
# listening on loopback TCP stands in for the other machine (qemu+tcp://127.0.0.1:PORT/system,
# which Corral treats as remote: nothing of this machine's files is used by QEMU). Checks that
# the image is uploaded to the "corral" storage pool there once and reused, that the agent, the
# shared-folder port and the console come through corral-chanbridge, that a stop ends the bridge
# and a start or a re-attach brings it back, that a standard image's disk is an overlay volume
# there that rm deletes, that gc removes uploaded images no VM there uses, that the warm pool
# hands out a VM there, and that what needs this machine (fork, snapshots) is refused clearly.
#
# Needs root (a system-mode libvirtd) and libvirt-daemon-system (remote-libvirtd.sh).
# Environment (set by meson): CORRAL_BUILD_DIR.
# Exit: 0 pass, 1 fail, 77 skip (unless CORRAL_REQUIRE_VM=1).
set -uo pipefail

log() { echo "test-vm-remote: [${SECONDS}s] $*" >&2; }
fail() {
	log "FAIL: $*"
	for f in "$RUN"/libvirtd.log "$STATE"/corral/vms/*/bridge.log "$STATE"/corral/vms/*/fsd.log \
		"$STATE"/corral/vms/*/console.log; do
		[ -e "$f" ] && { log "--- $f"; tail -20 "$f" >&2; }
	done
	exit 1
}
skip() {
	if [ "${CORRAL_REQUIRE_VM:-}" = 1 ]; then fail "VMs are required here: $*"; fi
	log "SKIP: $*"
	exit 77
}

CTL=${CORRAL_BUILD_DIR:?}/app/corralctl
STATE=/tmp/corral-vm-remote
RUN=$(mktemp -d /tmp/corral-remote-run.XXXXXX)
DATA=$(mktemp -d /tmp/corral-remote-data.XXXXXX)
[ -x "$CTL" ] || skip "no corralctl in $CORRAL_BUILD_DIR"
# shellcheck source=tests/vm/remote-libvirtd.sh
. "$(dirname "$0")/remote-libvirtd.sh"

cleanup() {
	if [ -n "$URI" ]; then
		for vm in $("$CTL" vm ls 2>/dev/null | awk 'NR > 1 { print $1 }'); do
			"$CTL" vm destroy "$vm" >/dev/null 2>&1
			"$CTL" vm rm "$vm" >/dev/null 2>&1
		done
	fi
	remote_libvirtd_stop
	pkill -f "$BRIDGE" 2>/dev/null
	pkill -f "corral-fsd --connect $STATE" 2>/dev/null
	rm -rf "$RUN" "$DATA" "$STATE"
}
URI=
BRIDGE=corral-chanbridge-none
trap cleanup EXIT
rm -rf "$STATE"
remote_libvirtd_start "$RUN" || skip "$REMOTE_WHY"
URI=$REMOTE_URI
export XDG_STATE_HOME=$STATE CORRAL_LIBVIRT_URI=$URI
# Corral takes KVM when the libvirt host lists it; these machines' /dev/kvm (kvm_pvm) is listed
# but cannot run guests, which Corral can only detect on its own machine.
export CORRAL_ACCEL=tcg
VIRSH=(virsh -q -c "$URI")
# pgrep patterns are regular expressions: no "+" from the URI in them.
BRIDGE="corral-chanbridge --uri ${URI/+/.}"
log "libvirtd at $URI"

# --- a minimal VM: uploads, the agent through the bridge, the console ---
"$CTL" vm create rtest >"$RUN/create.out" 2>&1 || fail "vm create: $(tail -5 "$RUN/create.out")"
"${VIRSH[@]}" vol-list corral >"$RUN/vols" || fail "no storage pool “corral” on the libvirt host"
grep -q -- '-vmlinuz ' "$RUN/vols" && grep -q -- '-vmlinuz.done ' "$RUN/vols" &&
	grep -q -- '-initramfs.img ' "$RUN/vols" || fail "kernel and initrd were not uploaded: $(cat "$RUN/vols")"
KERNEL_VOL=$(awk '/-vmlinuz /{print $2}' "$RUN/vols")
# QEMU there uses the uploaded copies, not this machine's files.
"${VIRSH[@]}" dumpxml corral-rtest >"$RUN/rtest.xml"
grep -q "<kernel>$KERNEL_VOL</kernel>" "$RUN/rtest.xml" || fail "the domain does not boot the uploaded kernel"
grep -q "$HOME/.cache" "$RUN/rtest.xml" && fail "the domain refers to this machine's files"
"$CTL" vm ls >"$RUN/ls.out" 2>&1 && grep -q "rtest" "$RUN/ls.out" || fail "vm ls: $(cat "$RUN/ls.out")"

out=$("$CTL" exec rtest -- uname -sr 2>&1) || fail "exec uname: $out"
case "$out" in Linux*) ;; *) fail "uname said: $out" ;; esac
"$CTL" exec rtest -- sh -c 'echo out; echo err >&2; exit 7' >"$RUN/o" 2>"$RUN/e"
rc=$?
[ $rc = 7 ] && [ "$(cat "$RUN/o")" = out ] && grep -q err "$RUN/e" || fail "exit status $rc, output $(cat "$RUN/o" "$RUN/e")"
log "exec through the bridge: $out, exit status 7 kept"

VMDIR=$STATE/corral/vms/rtest
[ "$(stat -c %a "$VMDIR/agent.sock")" = 600 ] && [ "$(stat -c %a "$VMDIR/fs.sock")" = 600 ] &&
	[ "$(stat -c %a "$VMDIR")" = 700 ] || fail "the bridge's sockets are not private: $(ls -la "$VMDIR")"
CONSOLE=$VMDIR/console.log
# The VM started paused until the bridge listened: the console copy has the boot's first lines.
for _ in $(seq 50); do grep -q "corral-init: agent started" "$CONSOLE" 2>/dev/null && break; sleep 0.2; done
grep -q "corral-init: agent started" "$CONSOLE" || fail "the console was not copied to $CONSOLE: $(tail -5 "$CONSOLE")"

# --- a shared folder through the bridge (no shared memory across machines: the port only) ---
mkdir -p "$DATA/docs" && echo "remote hello" >"$DATA/docs/note.txt"
"$CTL" share add rtest "$DATA/docs" --mode ro >"$RUN/share.out" 2>&1 || fail "share add: $(cat "$RUN/share.out")"
for _ in $(seq 100); do
	"$CTL" exec rtest -- test -e /workspace/docs/note.txt 2>/dev/null && break
	sleep 0.2
done
out=$("$CTL" exec rtest -- cat /workspace/docs/note.txt 2>&1)
[ "$out" = "remote hello" ] || fail "reading a shared file said: $out"
"$CTL" exec rtest -- sh -c 'echo x > /workspace/docs/new.txt' 2>"$RUN/e" && fail "a read-only share took a write"
[ -e "$DATA/docs/new.txt" ] && fail "a read-only share created a file"
log "read-only share works through the bridge"

# --- re-attach: the bridge is gone (say, this machine rebooted); the next exec restarts it ---
pkill -f "$BRIDGE --domain corral-rtest"
for _ in $(seq 50); do pgrep -f "$BRIDGE --domain corral-rtest" >/dev/null || break; sleep 0.1; done
out=$("$CTL" exec rtest -- echo back 2>&1) || fail "exec after the bridge died: $out"
[ "$out" = back ] || fail "exec after the bridge died said: $out"
pgrep -f "$BRIDGE --domain corral-rtest" >/dev/null || fail "no bridge after re-attach"

# --- stop ends the bridge; start brings it back ---
"$CTL" vm stop rtest >"$RUN/stop.out" 2>&1 || fail "vm stop: $(cat "$RUN/stop.out")"
for _ in $(seq 100); do pgrep -f "$BRIDGE --domain corral-rtest" >/dev/null || break; sleep 0.1; done
pgrep -f "$BRIDGE --domain corral-rtest" >/dev/null && fail "the bridge outlived its VM"
# The guest powered itself off (system.poweroff) while the bridge still copied its console.
grep -q "going down" "$CONSOLE" || fail "the stop was not the guest's own poweroff: $(tail -5 "$CONSOLE")"
"$CTL" vm start rtest >"$RUN/start.out" 2>&1 || fail "vm start: $(cat "$RUN/start.out")"
out=$("$CTL" exec rtest -- echo again 2>&1) || fail "exec after start: $out"
[ "$out" = again ] || fail "exec after start said: $out"
log "stop ended the bridge, start and exec brought it back"

# --- what needs this machine is refused, and says why ---
"$CTL" vm fork rtest rfork >"$RUN/fork.out" 2>&1 && fail "fork over a remote URI succeeded?"
grep -q "remote libvirt" "$RUN/fork.out" || fail "fork refusal does not say why: $(cat "$RUN/fork.out")"

# --- a standard image: its disk is an overlay volume there over the uploaded base ---
"$CTL" vm create rstd --image standard >"$RUN/std.out" 2>&1 || fail "vm create standard: $(tail -5 "$RUN/std.out")"
"${VIRSH[@]}" vol-list corral >"$RUN/vols2"
grep -q '^ *corral-vm-rstd.qcow2 ' "$RUN/vols2" || fail "no overlay volume for rstd: $(cat "$RUN/vols2")"
grep -q -- '-disk.qcow2.done ' "$RUN/vols2" || fail "the base disk was not uploaded"
grep -q "<backingStore>" <<<"$("${VIRSH[@]}" vol-dumpxml --pool corral corral-vm-rstd.qcow2)" || fail "the overlay has no backing store"
out=$("$CTL" exec rstd -- python3 -c 'print(6*7)' 2>&1) || fail "python3 in the standard VM: $out"
[ "$out" = 42 ] || fail "python3 said: $out"
"$CTL" vm rm rstd >"$RUN/rm.out" 2>&1 || fail "vm rm rstd: $(cat "$RUN/rm.out")"
"${VIRSH[@]}" vol-list corral >"$RUN/vols3"
grep -q 'corral-vm-rstd.qcow2' "$RUN/vols3" && fail "rm left the VM's disk on the libvirt host"
grep -q -- '-disk.qcow2 ' "$RUN/vols3" || fail "rm removed the shared base image"
log "standard image: overlay volume over the uploaded base, python3 runs, rm deletes the overlay"

# --- gc: the standard image no VM there uses goes, marker and all; rtest's image stays ---
BASE_VOL=$(awk '/-disk.qcow2 /{print $2}' "$RUN/vols2")
# Uploads younger than a minute are spared (a create in progress): age this one.
touch -d '-5 min' "$BASE_VOL" "$BASE_VOL.done"
# (An empty image cache here: the test cleans the other machine, not this one's cache.)
XDG_CACHE_HOME=$RUN/cache "$CTL" gc >"$RUN/gc.out" 2>&1 || fail "gc: $(cat "$RUN/gc.out")"
grep -q "removed .*$BASE_VOL .*no VM there uses" "$RUN/gc.out" || fail "gc did not list the unused image: $(cat "$RUN/gc.out")"
"${VIRSH[@]}" vol-list corral >"$RUN/vols4"
grep -q -- '-disk.qcow2' "$RUN/vols4" && fail "gc left the unused standard image or its marker"
[ -e "$KERNEL_VOL" ] || fail "gc removed the kernel rtest boots"
log "gc removed the unused uploaded image and kept the one in use"

# --- the image is uploaded once: a new VM reuses the volumes ---
before=$(stat -c %Y "$KERNEL_VOL")
"$CTL" vm rm rtest >/dev/null 2>&1 || fail "vm rm rtest"
"$CTL" vm create rtest >"$RUN/create2.out" 2>&1 || fail "second create: $(tail -5 "$RUN/create2.out")"
[ "$(stat -c %Y "$KERNEL_VOL")" = "$before" ] || fail "the kernel was uploaded again"
out=$("$CTL" exec rtest -- echo reused 2>&1)
[ "$out" = reused ] || fail "exec in the second VM said: $out"

# --- the warm pool there: a pre-booted VM handed out under a name, through its bridge ---
"$CTL" vm pool fill 1 >"$RUN/pool.out" 2>&1 || fail "pool fill: $(cat "$RUN/pool.out")"
"$CTL" vm create rpool --from-pool >"$RUN/take.out" 2>&1 || fail "take from the pool: $(cat "$RUN/take.out")"
grep -q "warm pool VM" "$RUN/take.out" || fail "rpool did not come from the pool: $(cat "$RUN/take.out")"
out=$("$CTL" exec rpool -- echo pooled 2>&1)
[ "$out" = pooled ] || fail "exec in the pool VM said: $out"
log "warm pool handout works over the remote URI"
log "PASS"
