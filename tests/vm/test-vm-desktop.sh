#!/bin/bash
# The desktop image (guest-image/desktop) driven through corralctl as a person or the assistant
# would: `corralctl image build desktop`, `vm create --image desktop --screen --share` (which
# waits for the desktop), then in that one VM: a screenshot of a real desktop with its panel, a
# click on a button that writes into the shared folder, text typed into Mousepad and saved with
# ctrl+s (the host file compared byte for byte), a scroll and a drag (a selection) that change
# what Mousepad shows.
#
# Environment (set by meson): CORRAL_BUILD_DIR.
# Exit: 0 pass, 1 fail, 77 skip (no QEMU, mmdebstrap or root here, unless CORRAL_REQUIRE_VM=1).
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
STATS=$(dirname "$0")/png-stats.py
[ -x "$CTL" ] || skip "no corralctl at $CTL"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed"
command -v mmdebstrap >/dev/null || skip "mmdebstrap not installed (the desktop image is built with it)"
[ "$(id -u)" = 0 ] || skip "building the desktop image needs root for now"

VM=dtest
STATE=/tmp/corral-vm-desktop
export XDG_STATE_HOME=$STATE
DATA=$(mktemp -d /tmp/corral-vm-desktop-data.XXXXXX)
SHARE=$DATA/desk
cleanup() {
	"$CTL" vm destroy "$VM" >/dev/null 2>&1
	"$CTL" vm rm "$VM" >/dev/null 2>&1
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

log "ok"
