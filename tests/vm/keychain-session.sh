# Sourced by VM tests that store a secret: runs the test again under a session bus of its own
# (at $XDG_RUNTIME_DIR/bus, where a desktop has it) with an unlocked gnome-keyring on it
# (ENVIRONMENT.md's recipe), then exits with the test's status. Images stay in the usual cache.
# Needs skip() from the test. Usage: keychain_session "$0" "$@"
keychain_session() {
	local bus rc
	[ -n "${CORRAL_KEYCHAIN_TEST_DIR:-}" ] && return 0
	command -v dbus-run-session >/dev/null && command -v gnome-keyring-daemon >/dev/null ||
		skip "dbus-run-session or gnome-keyring-daemon missing (tools/setup-deps --tests)"
	CORRAL_KEYCHAIN_TEST_DIR=$(mktemp -d /tmp/corral-vm-keyring.XXXXXX)
	export CORRAL_KEYCHAIN_TEST_DIR
	export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache}
	export XDG_DATA_HOME=$CORRAL_KEYCHAIN_TEST_DIR/data XDG_RUNTIME_DIR=$CORRAL_KEYCHAIN_TEST_DIR/run
	mkdir -p -m 0700 "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
	export DBUS_SESSION_BUS_ADDRESS=unix:path=$XDG_RUNTIME_DIR/bus
	dbus-daemon --session --nofork --address="$DBUS_SESSION_BUS_ADDRESS" &
	bus=$!
	for _ in $(seq 50); do [ -S "$XDG_RUNTIME_DIR/bus" ] && break; sleep 0.1; done
	sleep 0.2
	echo -n corral-test | gnome-keyring-daemon --unlock --components=secrets >/dev/null
	"$@"
	rc=$?
	kill "$bus"
	rm -rf "$CORRAL_KEYCHAIN_TEST_DIR"
	exit $rc
}
