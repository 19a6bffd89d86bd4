#!/bin/bash
# The desktop image (guest-image/desktop) driven through corralctl as a person or the assistant
# would: `corralctl image build desktop`, `vm create --image desktop --screen --share` (which
# waits for the desktop), then in that one VM: a screenshot of a real desktop with its panel, a
# click on a button that writes into the shared folder, text typed into Mousepad and saved with
# ctrl+s (the host file compared byte for byte), a scroll and a drag (a selection) that change
# what Mousepad shows; Firefox, started with the desktop session's environment, loads a page
# over HTTP and one over HTTPS from loopback servers on the host through the in-VM proxy (which
# asks for the session's token) and corral-egressd (which intercepts the HTTPS host a secret is
# bound to with the session CA), without asking the person anything.
#
# Runs under a keychain of its own (tests/vm/keychain-session.sh).
# Environment (set by meson): CORRAL_BUILD_DIR, CORRAL_SOURCE_DIR.
# Exit: 0 pass, 1 fail, 77 skip (no QEMU or mmdebstrap here, or no subordinate ids as a user,
# unless CORRAL_REQUIRE_VM=1).
set -uo pipefail

log() { echo "test-vm-desktop: $*" >&2; }
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
SRC=${CORRAL_SOURCE_DIR:?}
STATS=$(dirname "$0")/png-stats.py
[ -x "$CTL" ] || skip "no corralctl at $CTL"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed"
command -v mmdebstrap >/dev/null || skip "mmdebstrap not installed (the desktop image is built with it)"
[ "$(id -u)" = 0 ] || grep -q "^$(id -un):" /etc/subuid 2>/dev/null ||
	skip "building the desktop image as $(id -un) needs subordinate ids (/etc/subuid)"
. "$SRC/tests/vm/keychain-session.sh"
keychain_session "$0" "$@"

VM=dtest
STATE=/tmp/corral-vm-desktop
export XDG_STATE_HOME=$STATE
DATA=$(mktemp -d /tmp/corral-vm-desktop-data.XXXXXX)
SHARE=$DATA/desk
ORIGIN_PID=
cleanup() {
	"$CTL" vm destroy "$VM" >/dev/null 2>&1
	"$CTL" vm rm "$VM" >/dev/null 2>&1
	"$CTL" secret rm DESKTOP_TEST_TOKEN >/dev/null 2>&1
	[ -n "$ORIGIN_PID" ] && kill "$ORIGIN_PID" 2>/dev/null
	rm -rf "$DATA" "$STATE"
}
trap cleanup EXIT
cleanup
mkdir -p "$SHARE"

now() { date +%s.%N; }
since() { python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.1f}")' "$1" "$(now)"; }
# A command in the VM as the agent's user, on the desktop's display; output whole.
guest() { "$CTL" exec "$VM" -- env DISPLAY=:0 "$@"; }
# Starts a program on the desktop and returns at once (its output away, so the exec ends).
guest_start() { "$CTL" exec "$VM" -- sh -c 'DISPLAY=:0 setsid "$@" </dev/null >/dev/null 2>&1 &' sh "$@"; }
# Waits until a top-level window whose xwininfo line matches PATTERN exists; prints the line.
wait_window() {
	local tree
	for _ in $(seq 120); do
		tree=$(guest xwininfo -root -tree 2>/dev/null)
		if grep -q -- "$1" <<<"$tree"; then
			grep -m1 -- "$1" <<<"$tree"
			return 0
		fi
		sleep 0.5
	done
	return 1
}
# The geometry "X Y W H" of the window named NAME (xwininfo -name).
window_geometry() {
	local info
	info=$(guest xwininfo -name "$1") || return 1
	awk -F: '/Absolute upper-left X/ { x = $2 } /Absolute upper-left Y/ { y = $2 }
		/^ *Width/ { w = $2 } /^ *Height/ { h = $2 } END { print x + 0, y + 0, w + 0, h + 0 }' <<<"$info"
}
screenshot() { "$CTL" computer "$VM" screenshot -o "$1" >/dev/null || fail "screenshot $1"; }

log "building (or finding) the desktop image"
start=$(now)
"$CTL" image build desktop || fail "corralctl image build desktop"
log "image ready after $(since "$start") s"

# Loopback servers for Firefox (tests/vm/egress-origin.py): "http" plain, "https" with a test
# CA that corral-egressd trusts; a secret bound to the HTTPS one makes the proxy intercept it.
. "$SRC/tests/vm/egress-origin.sh"
start_origin "$DATA"
printf '%s' corral-desktop-test-secret |
	"$CTL" secret set DESKTOP_TEST_TOKEN --host "host.corral.internal:$HTTPS" >/dev/null ||
	fail "corralctl secret set"

log "creating a VM with the desktop image, a screen and a shared folder"
start=$(now)
out=$("$CTL" vm create --image desktop --screen --share "$SHARE:rw" "$VM" 2>&1) ||
	fail "vm create: $out"
log "vm create (boot to desktop-ready) took $(since "$start") s"
grep -q "Waiting for the desktop" <<<"$out" || fail "vm create did not wait for the desktop: $out"
out=$(guest test -e /run/corral/desktop-ready && echo yes) || true
[ "$out" = yes ] || fail "vm create returned before the desktop was ready"

log "a screenshot of the desktop: its size, many colours, the panel's window"
for try in $(seq 20); do
	screenshot "$DATA/desktop.png"
	read -r pw ph colours <<<"$(python3 "$STATS" "$DATA/desktop.png")" || fail "not a PNG"
	[ "$colours" -ge 32 ] && break
	sleep 1
done
log "screenshot ${pw}x$ph, $colours colours ($try tries)"
[ "$pw" = 1280 ] && [ "$ph" = 800 ] || fail "the screenshot is ${pw}x$ph, not 1280x800"
[ "$colours" -ge 32 ] || fail "the screen has only $colours colours: no desktop"
tree=$(guest xwininfo -root -tree) || fail "xwininfo in the VM"
grep -q '"Xfce4-panel"' <<<"$tree" || fail "no panel window on the desktop"
grep -q '"Xfdesktop"' <<<"$tree" || fail "no desktop window"

log "a click on the test button writes into the shared folder"
guest_start corral-test-button /workspace/desk/clicked || fail "starting corral-test-button"
wait_window '"corral-test-button"' >/dev/null || fail "the test button's window did not appear"
sleep 1 # the window is mapped; give Tk a moment to draw it
out=$("$CTL" computer "$VM" click 300 250) || fail "click: $out"
for _ in $(seq 60); do
	[ -s "$SHARE/clicked" ] && break
	sleep 0.5
done
[ "$(cat "$SHARE/clicked" 2>/dev/null)" = clicked ] || fail "the click did not reach the button"

log "text typed into Mousepad and saved with ctrl+s"
# Symbols that move about on other keyboards, and characters no US key has (typed through
# GTK's Unicode input, ctrl+shift+u), then a new line.
TEXT='Hello, @#{}|~<> [x] "q" '\''a'\'' $5 %^&*()_+=-\/;:? Grüße, café, 5 € '
: >"$SHARE/typed.txt"
guest_start mousepad /workspace/desk/typed.txt || fail "starting mousepad"
wait_window 'typed.txt' >/dev/null || fail "Mousepad's window did not appear"
sleep 2
read -r mx my mw mh <<<"$(window_geometry "$(wait_window 'typed.txt' | sed 's/^[^"]*"\([^"]*\)".*/\1/')")" ||
	fail "Mousepad's geometry"
log "Mousepad at $mx,$my ${mw}x$mh"
out=$("$CTL" computer "$VM" click $((mx + mw / 2)) $((my + mh / 2))) || fail "click into Mousepad: $out"
out=$("$CTL" computer "$VM" type "$TEXT") || fail "type: $out"
out=$("$CTL" computer "$VM" key ctrl+s) || fail "key ctrl+s: $out"
for _ in $(seq 60); do
	[ -s "$SHARE/typed.txt" ] && break
	sleep 0.5
done
got=$(od -c "$SHARE/typed.txt")
want=$(printf '%s' "$TEXT" | od -c)
[ "$got" = "$want" ] || fail "the saved file differs from the typed text:
got:
$got
want:
$want"

log "scrolling Mousepad changes what it shows"
seq 1 400 | sed 's/^/line /' >"$SHARE/long.txt"
guest_start mousepad /workspace/desk/long.txt || fail "starting mousepad on long.txt"
wait_window 'long.txt' >/dev/null || fail "Mousepad's window for long.txt did not appear"
sleep 2
name=$(wait_window 'long.txt' | sed 's/^[^"]*"\([^"]*\)".*/\1/')
read -r lx ly lw lh <<<"$(window_geometry "$name")" || fail "long.txt's geometry"
region="$((lx + 10)) $((ly + 60)) $((lx + lw - 30)) $((ly + lh - 40))"
# shellcheck disable=SC2086 # a region is four numbers
"$CTL" computer "$VM" zoom $region -o "$DATA/before.png" >/dev/null || fail "zoom before scrolling"
out=$("$CTL" computer "$VM" scroll $((lx + lw / 2)) $((ly + lh / 2)) down 10) || fail "scroll: $out"
sleep 1
# shellcheck disable=SC2086
"$CTL" computer "$VM" zoom $region -o "$DATA/after.png" >/dev/null || fail "zoom after scrolling"
cmp -s "$DATA/before.png" "$DATA/after.png" && fail "scrolling changed nothing in Mousepad's text"

log "dragging across Mousepad's text selects it"
out=$("$CTL" computer "$VM" drag $((lx + 40)) $((ly + 120)) $((lx + 300)) $((ly + 220))) || fail "drag: $out"
sleep 1
# shellcheck disable=SC2086
"$CTL" computer "$VM" zoom $region -o "$DATA/selected.png" >/dev/null || fail "zoom after the drag"
cmp -s "$DATA/after.png" "$DATA/selected.png" && fail "the drag selected nothing in Mousepad"

log "dragging Mousepad's title bar moves its window"
read -r bx by _ _ <<<"$(window_geometry "$name")" || fail "long.txt's geometry before the move"
out=$("$CTL" computer "$VM" drag $((bx + 150)) $((by - 15)) $((bx + 50)) $((by - 115))) ||
	fail "drag the title bar: $out"
read -r ax ay _ _ <<<"$(window_geometry "$name")" || fail "long.txt's geometry after the move"
[ "$((bx - ax))" = 100 ] && [ "$((by - ay))" = 100 ] ||
	fail "the window went from $bx,$by to $ax,$ay, not 100 pixels up and left"

log "Firefox, as the desktop starts it, loads pages through the proxy without asking"
for rule in "host.corral.internal:$HTTP" "host.corral.internal:$HTTPS"; do
	"$CTL" net allow "$VM" "$rule" >/dev/null || fail "corralctl net allow $rule"
done
# The panel's environment is the session's: what a program started from its menu gets. (Its
# process is out of sight of the agent's confined commands: --unconfined.)
panel_env=$("$CTL" exec --unconfined "$VM" -- sh -c 'tr "\0" "\n" </proc/$(pgrep -x xfce4-panel)/environ') ||
	fail "cannot read the panel's environment"
grep -q '^HTTP_PROXY=http://corral:[A-Za-z0-9_-]*@127.0.0.1:1023$' <<<"$panel_env" ||
	fail "the desktop session has no proxy: $(grep -i proxy <<<"$panel_env")"
# Runs a program with the session's environment (the panel's), as the panel's menu would.
cat >"$SHARE/launch.py" <<'PY'
import os, subprocess, sys
pid = subprocess.check_output(["pgrep", "-x", "xfce4-panel"]).split()[0].decode()
env = dict(v.split("=", 1) for v in open(f"/proc/{pid}/environ").read().split("\0") if "=" in v)
os.execvpe(sys.argv[1], sys.argv[1:], env)
PY
firefox() {
	"$CTL" exec --unconfined "$VM" -- sh -c \
		'setsid python3 /workspace/desk/launch.py firefox-esr "$@" </dev/null >>/tmp/firefox.log 2>&1 &' sh "$@"
}
# A page is shown when its title (from the reply's body) is Firefox's window title.
printf '<!doctype html><title>Corral plain page</title><p>Through the proxy.\n' >"$DATA/www/plain.html"
printf '<!doctype html><title>Corral secure page</title><p>Through the proxy.\n' >"$DATA/www/secure.html"
seen() { grep -q "\"server\": \"$1\", \"method\": \"GET\", \"path\": \"/$2\"" "$DATA/origin.jsonl" 2>/dev/null; }
shown() { guest xwininfo -root -tree 2>/dev/null | grep -q "\"$1 "; }
# Waits (at most $2 s) for the page titled $1; when it does not come, says what the VM's
# sockets were doing (Firefox's connection to the proxy; "Waiting for" a reply it had read
# whole once left its socket in CLOSE-WAIT).
wait_shown() {
	local until=$((SECONDS + $2))
	while [ "$SECONDS" -lt "$until" ]; do
		shown "$1" && return 0
		sleep 1
	done
	log "\"$1\" not shown after $2 s. The VM's sockets:
$("$CTL" exec --unconfined "$VM" -- ss -tn 2>&1)"
	return 1
}
firefox "http://host.corral.internal:$HTTP/plain.html" || fail "starting Firefox"
wait_shown "Corral plain page" 240
screenshot "$DATA/firefox-http.png"
shown "Corral plain page" || fail "Firefox did not show the HTTP page (request at the origin: $(seen http plain.html && echo yes || echo no)); its log:
$(guest tail -20 /tmp/firefox.log)"
# The HTTPS page in a Firefox started afresh: opened as a second page of the first Firefox it
# sometimes stays "Waiting for" a reply Firefox has read whole (about one run in three here,
# with or without speculative connections and site isolation; guest-image/desktop/README.md).
"$CTL" exec --unconfined "$VM" -- sh -c 'pkill -x firefox-esr
	for i in $(seq 60); do pgrep -x firefox-esr >/dev/null || exit 0; sleep 0.5; done
	exit 1' || fail "Firefox did not quit"
firefox "https://host.corral.internal:$HTTPS/secure.html" || fail "opening the HTTPS page in Firefox"
wait_shown "Corral secure page" 240
screenshot "$DATA/firefox-https.png"
shown "Corral secure page" || fail "Firefox did not show the HTTPS page (request at the origin: $(seen https secure.html && echo yes || echo no): the session CA not trusted?); its log:
$(guest tail -20 /tmp/firefox.log)"
tree=$(guest xwininfo -root -tree) || fail "xwininfo in the VM"
grep -q 'Authentication Required' <<<"$tree" && fail "Firefox asked the person for the proxy's password"
# Kept for a person to look at: the build tree's tests/vm/screenshots/.
mkdir -p "$CORRAL_BUILD_DIR/tests/vm/screenshots" &&
	cp "$DATA/firefox-http.png" "$DATA/firefox-https.png" "$CORRAL_BUILD_DIR/tests/vm/screenshots/"

log "ok"
