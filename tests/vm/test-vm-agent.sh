#!/bin/bash
# The assistant loop against a booted minimal VM, through `corralctl assistant` as a person would run it
# in a terminal, with the model played by corral-fake-llm: the model tries to delete a file in a
# "can edit, but not delete" share, the sandbox refuses and the tool result says why, the model
# asks for approval, the person (a pty here) says yes, and the host deletes exactly that file,
# keeping a copy. A second run where the person says no deletes nothing.
#
# Environment (set by meson): CORRAL_BUILD_DIR.
# Exit: 0 pass, 1 fail, 77 skip (no QEMU/libvirt here, unless CORRAL_REQUIRE_VM=1).
set -uo pipefail

log() { echo "test-vm-agent: $*" >&2; }
fail() {
	log "FAIL: $*"
	[ -n "${OUT:-}" ] && [ -e "$OUT" ] && tail -30 "$OUT" >&2
	exit 1
}
skip() {
	if [ "${CORRAL_REQUIRE_VM:-}" = 1 ]; then fail "VMs are required here: $*"; fi
	log "SKIP: $*"
	exit 77
}

CTL=${CORRAL_BUILD_DIR:?}/app/corralctl
FAKE=$CORRAL_BUILD_DIR/tests/fakes/corral-fake-llm
[ -x "$CTL" ] && [ -x "$FAKE" ] || skip "no corralctl or corral-fake-llm in $CORRAL_BUILD_DIR"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed"

STATE=/tmp/corral-vm-agent
export XDG_STATE_HOME=$STATE
DATA=$(mktemp -d /tmp/corral-vm-agent-data.XXXXXX)
FAKE_PID=
cleanup() {
	"$CTL" vm destroy agtest >/dev/null 2>&1
	"$CTL" vm rm agtest >/dev/null 2>&1
	[ -n "$FAKE_PID" ] && kill "$FAKE_PID" 2>/dev/null
	pkill -f "corral-fsd --connect $STATE" 2>/dev/null
	pkill -f "corral-egressd --connect $STATE" 2>/dev/null
	rm -rf "$DATA" "$STATE"
}
trap cleanup EXIT
"$CTL" vm destroy agtest >/dev/null 2>&1
"$CTL" vm rm agtest >/dev/null 2>&1

mkdir -p "$DATA/notes"
echo "old draft" >"$DATA/notes/old.txt"
echo "keep me" >"$DATA/notes/keep.txt"

log "creating a minimal VM sharing a folder as can-edit-but-not-delete"
"$CTL" vm create agtest --share "$DATA/notes:rw-nodelete" >"$DATA/ctl.out" 2>&1 ||
	skip "cannot create a VM here: $(tail -3 "$DATA/ctl.out")"
for _ in $(seq 100); do
	"$CTL" exec agtest -- test -e /workspace/notes/keep.txt 2>/dev/null && break
	sleep 0.2
done

# tool_turn ID NAME INPUT-JSON, text_turn TEXT: one model turn as Anthropic's SSE events.
. "$(dirname "$0")/fake-llm-turns.sh"
script() { # FILE: the three turns of one run
	{
		echo '{"replies": ['
		tool_turn t1 shell '{"command": "rm /workspace/notes/old.txt"}'
		echo ','
		tool_turn t2 request_approval '{"action": "delete", "path": "/workspace/notes/old.txt", "reason": "the user asked to remove the old draft"}'
		echo ','
		text_turn "Finished."
		echo ']}'
	} >"$1"
}

# Runs `corralctl assistant` on a pty (so it asks) and answers the approval with $1.
run_assistant() { # ANSWER
	script "$DATA/script.json"
	: >"$DATA/port"
	"$FAKE" --script "$DATA/script.json" --record "$DATA/requests.jsonl" >"$DATA/port" &
	FAKE_PID=$!
	for _ in $(seq 100); do grep -q 'listening on port' "$DATA/port" && break; sleep 0.1; done
	port=$(sed -n 's/^listening on port //p' "$DATA/port")
	[ -n "$port" ] || fail "corral-fake-llm did not start"
	OUT=$DATA/agent-$1.out
	ANTHROPIC_BASE_URL=http://127.0.0.1:$port ANTHROPIC_API_KEY=test-key \
		python3 - "$1" "$OUT" "$CTL" assistant agtest "Remove the old draft" --provider anthropic --model fake <<'PY'
import os, pty, sys, time
answer, out, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
buf = b""
answered = False
deadline = time.time() + 300
while time.time() < deadline:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    buf += chunk
    if not answered and b"Allow? [y/N]" in buf:
        os.write(fd, answer.encode() + b"\n")
        answered = True
open(out, "wb").write(buf)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) if answered else 99)
PY
	rc=$?
	kill "$FAKE_PID" 2>/dev/null
	wait "$FAKE_PID" 2>/dev/null
	FAKE_PID=
	[ "$rc" = 99 ] && fail "the assistant never asked for approval"
	return "$rc"
}

log "the person says no: nothing is deleted"
run_assistant n || fail "corralctl assistant failed (exit $?)"
[ -e "$DATA/notes/old.txt" ] || fail "a denied deletion happened"
grep -q 'denied' "$OUT" || fail "the denial was not shown"
# The refused rm was explained to the model in its tool result.
grep -q 'no-delete\|not delete\|Blocked by the sandbox' "$DATA/requests.jsonl" ||
	fail "the model was not told why rm failed"

log "the person says yes: exactly that file is deleted, a copy is kept"
rm -f "$DATA/requests.jsonl"
run_assistant y || fail "corralctl assistant failed (exit $?)"
[ -e "$DATA/notes/old.txt" ] && fail "the approved deletion did not happen"
[ -e "$DATA/notes/keep.txt" ] || fail "another file went missing"
grep -q 'allowed' "$OUT" || fail "the approval was not shown"
grep -rqs 'old draft' "$STATE/corral/kept" || fail "no copy of the deleted file was kept"
grep -q 'approved-by-person' "$STATE/corral/vms/agtest/audit.jsonl" ||
	fail "the audit log does not record the approval"
out=$("$CTL" exec agtest -- sh -c 'ls /workspace/notes') || fail "cannot list the share"
[ "$out" = keep.txt ] || fail "the guest sees '$out'"
log "corralctl mcp serves the VM to the official MCP SDK client"
NPM_DIR=${CORRAL_NPM_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/corral/npm}
if [ -d "$NPM_DIR/node_modules/@modelcontextprotocol/sdk" ] && command -v node >/dev/null; then
	"$CTL" exec agtest -- mkdir -p /tmp/mcp-work || fail "cannot make a folder in the guest"
	node "${CORRAL_SOURCE_DIR:?}/tests/integration/test-mcp-server.mjs" "$NPM_DIR" "$CTL" \
		/tmp/mcp-work agtest >"$DATA/mcp.out" 2>&1 || { cat "$DATA/mcp.out" >&2; fail "the MCP SDK client failed against the VM"; }
	out=$("$CTL" exec agtest -- cat /tmp/mcp-work/note.txt) || fail "write_file did not reach the guest"
elif [ "${CORRAL_REQUIRE_NPM:-}" = 1 ]; then
	fail "the MCP SDK is missing (tools/setup-npm)"
else
	log "no MCP SDK (tools/setup-npm): the MCP part is skipped"
fi

# corralctl like ssh and systemd-run (test-corralctl covers Ctrl+C on a terminal).
log "while an exec runs, other commands still reach libvirt (exec holds none)"
"$CTL" exec agtest -- sleep 6 >/dev/null 2>&1 &
bg=$!
sleep 2
"$CTL" vm ls >"$DATA/ls.out" 2>&1 || fail "vm ls failed while an exec ran: $(cat "$DATA/ls.out")"
grep -q '^agtest ' "$DATA/ls.out" || fail "vm ls did not list the VM while an exec ran"
wait "$bg" || fail "the exec that ran meanwhile failed"
log "timeout stops a command that ignores SIGTERM: forwarded, then killed after the grace"
start=$SECONDS
timeout 2 "$CTL" exec agtest -- sh -c "trap '' TERM; sleep 30"
rc=$?
took=$((SECONDS - start))
[ "$rc" = 124 ] || fail "timeout 2 corralctl exec returned $rc, not 124"
[ "$took" -le 10 ] || fail "corralctl took ${took} s to stop after SIGTERM (grace 5 s)"
# Shell built-ins only: whatever applets the image has.
out=$("$CTL" exec agtest -- sh -c 'for c in /proc/[0-9]*/comm; do
	read -r n <"$c" 2>/dev/null && [ "$n" = sleep ] && echo sleeping; done; true') ||
	fail "cannot list the guest's processes"
[ -z "$out" ] || fail "the command's process group outlived corralctl"

# The second wall (SECURITY.md A7, A8), in the guest's own kernel.
log "each command runs under the seccomp filter and Landlock; the services are out of reach"
PROBE=$CORRAL_BUILD_DIR/tests/confine-probe
[ -x "$PROBE" ] || fail "no confine-probe in $CORRAL_BUILD_DIR"
"$CTL" info agtest >"$DATA/info.out" 2>&1 || fail "corralctl info failed: $(cat "$DATA/info.out")"
grep -q '"landlock":[[:space:]]*"on (ABI [0-9]*)"' "$DATA/info.out" ||
	fail "Landlock is not on in the guest: $(grep -A3 confinement "$DATA/info.out")"
grep -q '"seccomp":[[:space:]]*"on (' "$DATA/info.out" || fail "the seccomp filter is not on"
"$CTL" exec -i agtest -- sh -c 'cat >/tmp/probe && chmod 0755 /tmp/probe' <"$PROBE" ||
	fail "cannot copy confine-probe into the guest"
"$CTL" exec agtest -- /tmp/probe >"$DATA/probe.out" 2>&1 || fail "confine-probe failed: $(cat "$DATA/probe.out")"
python3 - "$DATA/info.out" "$DATA/probe.out" <<'PY' || fail "a refused call got through in the guest"
import json, sys
text = open(sys.argv[1]).read()
info = json.loads(text[text.index("{"):])
got = dict(l.split(" ", 1) for l in open(sys.argv[2]).read().splitlines() if " " in l)
refused = info["confinement"]["refused"]
bad = [f"{n}: {got.get(n)} (want {e})" for n, e in refused.items() if got.get(n) != e]
bad += [f"{n}: {got.get(n)}" for n, e in (("int80", "EPERM"), ("personality-query", "ok"),
                                           ("getpid", "ok")) if got.get(n) != e]
if bad:
    sys.exit("\n".join(bad))
PY
out=$("$CTL" exec agtest -- sh -c '
	for f in /dev/virtio-ports/* /dev/vport* /dev/fuse /dev/vsock /run/corral/net.env; do
		[ -e "$f" ] && (: <"$f") 2>/dev/null && echo "opened $f"
	done
	kill -0 $PPID 2>/dev/null && echo "signalled the agent"
	[ -e /proc/$PPID ] && echo "sees the agent in /proc"
	for c in /proc/[0-9]*/comm; do
		read -r n <"$c" 2>/dev/null && case $n in corral-*) echo "sees $n";; esac
	done
	scope=$(cat /proc/sys/kernel/yama/ptrace_scope)
	[ "$scope" = 1 ] || echo "ptrace_scope is $scope"
	echo x >/workspace/notes/confined.txt || echo "cannot write the share"
	echo x >/tmp/t && echo x >"$HOME/t" || echo "cannot write /tmp or home"
	(echo x >/etc/corral-probe) 2>/dev/null && echo "wrote /etc"
	true') || fail "the reach checks did not run: $out"
[ -z "$out" ] || fail "a command reached what it must not: $out"
[ -e "$DATA/notes/confined.txt" ] || fail "the confined write to the share did not arrive"
out=$("$CTL" exec --unconfined agtest -- grep '^Seccomp:' /proc/self/status) ||
	fail "exec --unconfined failed: $out"
[ "$out" = "Seccomp:	0" ] || fail "exec --unconfined still ran under a filter: $out"
log "PASS"
