#!/bin/bash
# A VM with a screen (computer use), through corralctl as a person would use it: vm create
# --screen, then corralctl computer: the screen's size, a screenshot that is the VM's picture, a
# click, typed text and keys reaching QEMU, every action in the VM folder's computer.jsonl. The
# organisation's computerUse.allowed false refuses the screen before anything boots. One
# minimal VM (its kernel has no graphics driver: the screen is the VGA text console).
#
# Environment (set by meson): CORRAL_BUILD_DIR, CORRAL_AGENT_PATH.
# Exit: 0 pass, 1 fail, 77 skip (no QEMU/libvirt here, unless CORRAL_REQUIRE_VM=1).
set -uo pipefail

log() { echo "test-vm-screen: $*" >&2; }
fail() {
	log "FAIL: $*"
	exit 1
}
skip() {
	if [ "${CORRAL_REQUIRE_VM:-}" = 1 ]; then fail "VMs are required here: $*"; fi
	log "SKIP: $*"
	exit 77
}

CTL=${CORRAL_BUILD_DIR:?}/app/corralctl
STATS=$(dirname "$0")/png-stats.py
[ -x "$CTL" ] || skip "no corralctl at $CTL"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed"

STATE=/tmp/corral-vm-screen
export XDG_STATE_HOME=$STATE
DATA=$(mktemp -d /tmp/corral-vm-screen-data.XXXXXX)
cleanup() {
	"$CTL" vm destroy stest >/dev/null 2>&1
	"$CTL" vm rm stest >/dev/null 2>&1
	rm -rf "$DATA" "$STATE"
}
trap cleanup EXIT
cleanup
mkdir -p "$DATA"

log "the organisation turned computer use off: no screen, and nothing boots"
printf '{"computerUse": {"allowed": false}}\n' >"$DATA/managed.json"
out=$(CORRAL_MANAGED_POLICY="$DATA/managed.json" "$CTL" vm create --screen stest 2>&1) &&
	fail "a screen was given against the policy: $out"
grep -q "set by your organisation" <<<"$out" || fail "the refusal does not say whose rule: $out"
[ -d "$STATE/corral/vms/stest" ] && fail "a VM folder was made before the refusal"
# Only the organisation's lock refuses: the same value left to the person does not.
printf '{"computerUse": {"allowed": {"value": false, "locked": false}}}\n' >"$DATA/managed.json"

log "creating a VM with a screen"
CORRAL_MANAGED_POLICY="$DATA/managed.json" "$CTL" vm create --screen stest ||
	skip "cannot create a VM here"
[ -S "$STATE/corral/vms/stest/vnc.sock" ] || fail "no vnc.sock in the VM's folder"
mode=$(stat -c %a "$STATE/corral/vms/stest")
[ "$mode" = 700 ] || fail "the VM's folder is $mode, not 700: the screen's socket must be Corral's alone"

size=$("$CTL" computer stest size) || fail "computer size"
log "$size"
read -r w h <<<"$(sed -n 's/^screenshot \([0-9]*\)x\([0-9]*\) .*/\1 \2/p' <<<"$size")"
[ -n "$w" ] && [ "$w" -ge 640 ] && [ "$h" -ge 400 ] || fail "unexpected screen size: $size"

# The firmware's text is on the screen (a busy machine may still be switching modes: a few
# tries); a picture of it has more than one colour.
for try in 1 2 3 4 5 6 7 8 9 10; do
	"$CTL" computer stest screenshot -o "$DATA/one.png" || fail "screenshot"
	read -r pw ph colours <<<"$(python3 "$STATS" "$DATA/one.png")" || fail "the screenshot is not a PNG"
	[ "$colours" -ge 2 ] && break
	sleep 1
done
[ "$colours" -ge 2 ] || fail "the screenshot is one flat colour ($try tries)"
read -r w h <<<"$(sed -n 's/^screenshot \([0-9]*\)x\([0-9]*\) .*/\1 \2/p' <<<"$("$CTL" computer stest size)")"
[ "$pw" = "$w" ] && [ "$ph" = "$h" ] || fail "screenshot ${pw}x$ph, but the screen is ${w}x$h"

# (Output is read whole before grep: under pipefail, grep -q leaving at the first match would
# kill corralctl with SIGPIPE before its next line, and fail the step at random.)
out=$("$CTL" computer stest click 10 10) || fail "click"
grep -q "Clicked at (10, 10)" <<<"$out" || fail "click said: $out"
out=$("$CTL" computer stest type 'Hello, @#{}|~<> é' -o "$DATA/two.png") || fail "type"
grep -q "Typed 17 characters" <<<"$out" || fail "type said: $out"
[ -s "$DATA/two.png" ] || fail "no screenshot after typing"
"$CTL" computer stest key ctrl+alt+F2 || fail "key"
out=$("$CTL" computer stest scroll 100 100 down 3) || fail "scroll"
grep -q "Scrolled down by 3" <<<"$out" || fail "scroll said: $out"
"$CTL" computer stest --json '{"action": "zoom", "region": [0, 0, 100, 50]}' -o "$DATA/zoom.png" ||
	fail "zoom"
read -r zw zh _ <<<"$(python3 "$STATS" "$DATA/zoom.png")"
[ "$zw" -gt 100 ] || fail "zoom gave ${zw}x$zh"

# What the model gets wrong is refused, with what to send instead, and nothing reaches the VM.
out=$("$CTL" computer stest click 99999 5 2>&1) && fail "a click off the screen was sent"
grep -q "off the screen" <<<"$out" || fail "unclear refusal: $out"
out=$("$CTL" computer stest key ctrl+nosuchkey 2>&1) && fail "an unknown key was sent"
grep -q "not a key name" <<<"$out" || fail "unclear refusal: $out"

lines=$(wc -l <"$STATE/corral/vms/stest/computer.jsonl")
[ "$lines" -ge 8 ] || fail "computer.jsonl has $lines lines, not one per action"
grep -q '"action":"type","text":"Hello, @#{}|~<> é"' "$STATE/corral/vms/stest/computer.jsonl" ||
	fail "the typed text is not in computer.jsonl"
grep -q '"error":"“nosuchkey” is not a key name' "$STATE/corral/vms/stest/computer.jsonl" ||
	fail "the refused key is not in computer.jsonl"

# The assistant with --computer: a model (corral-fake-llm) looks, then clicks; the screenshot
# reaches it as an image with Anthropic's computer tool and its beta header.
FAKE=$CORRAL_BUILD_DIR/tests/fakes/corral-fake-llm
[ -x "$FAKE" ] || fail "no corral-fake-llm in $CORRAL_BUILD_DIR"
. "$(dirname "$0")/fake-llm-turns.sh"
{
	echo '{"replies": ['
	tool_turn c1 computer '{"action": "screenshot"}'
	echo ','
	tool_turn c2 computer '{"action": "left_click", "coordinate": [20, 20]}'
	echo ','
	text_turn "Done."
	echo ']}'
} >"$DATA/script.json"
"$FAKE" --script "$DATA/script.json" --record "$DATA/requests.jsonl" >"$DATA/port" &
FAKE_PID=$!
trap 'kill $FAKE_PID 2>/dev/null; cleanup' EXIT
for _ in $(seq 100); do grep -q 'listening on port' "$DATA/port" && break; sleep 0.1; done
port=$(sed -n 's/^listening on port //p' "$DATA/port")
[ -n "$port" ] || fail "corral-fake-llm did not start"
run_assistant() {
	ANTHROPIC_BASE_URL=http://127.0.0.1:$port ANTHROPIC_API_KEY=test-key \
		"$CTL" assistant stest "Click the corner" --computer --provider anthropic --model fake \
		--yes-to-nothing </dev/null
}
# The organisation's lock first: refused before the model is asked anything.
printf '{"computerUse": {"allowed": false}}\n' >"$DATA/locked.json"
out=$(CORRAL_MANAGED_POLICY="$DATA/locked.json" run_assistant 2>&1) &&
	fail "the assistant got the screen against the policy: $out"
grep -q "set by your organisation" <<<"$out" || fail "unclear refusal: $out"
[ -s "$DATA/requests.jsonl" ] && fail "the model was asked despite the refusal"
out=$(run_assistant 2>&1) || fail "corralctl assistant --computer: $out"
grep -q "Done." <<<"$out" || fail "the task did not end: $out"
python3 - "$DATA/requests.jsonl" <<'PY' || fail "the model did not get the computer tool and its screenshots"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
assert len(reqs) == 3, len(reqs)
for r in reqs:
    assert r["headers"].get("anthropic-beta") == "computer-use-2025-01-24", r["headers"]
    assert any(t.get("type") == "computer_20250124" for t in r["body"]["tools"])
for r in reqs[1:]:
    result = r["body"]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result", result
    image = [c for c in result["content"] if c["type"] == "image"][0]
    assert image["source"]["media_type"] == "image/png"
    assert image["source"]["data"].startswith("iVBORw0KGgo")
print("ok")
PY
kill $FAKE_PID 2>/dev/null

# corralctl mcp --computer: the computer tool for any MCP client, its screenshot as image content.
python3 - "$CTL" <<'PY' || fail "corralctl mcp --computer"
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp", "stest", "--computer"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True)
def ask(msg):
    p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05",
     "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
tools = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
assert "computer" in [t["name"] for t in tools], tools
r = ask({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "computer", "arguments": {"action": "screenshot"}}})["result"]
image = [c for c in r["content"] if c["type"] == "image"][0]
assert image["mimeType"] == "image/png" and image["data"].startswith("iVBORw0KGgo"), r
p.stdin.close(); p.wait(timeout=30)
PY

# Whoever drove the screen, each action is in the VM's computer log, never a screenshot.
LOG=$STATE/corral/vms/stest/computer.jsonl
for by in corralctl assistant mcp; do
	grep -q "\"by\":\"$by\"" "$LOG" || fail "no action by $by in computer.jsonl"
done
grep -q 'iVBORw0KGgo' "$LOG" && fail "computer.jsonl holds a screenshot"

# A VM without a screen says so.
out=$("$CTL" computer nosuchvm screenshot -o "$DATA/x.png" 2>&1) && fail "no VM, yet a screenshot"
grep -q "has no screen" <<<"$out" || fail "unclear error for a VM without a screen: $out"

log "ok"
