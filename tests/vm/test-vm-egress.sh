#!/bin/bash
# The network of a booted standard VM, through corralctl as a person would use it: a secret in
# the keychain, a policy (corralctl net), and curl, Python, git, Node.js and pip inside the VM
# reaching loopback servers on the host through the in-VM proxy and corral-egressd. The canary
# (the secret's value) must reach the bound host's server and nothing else: not the guest's
# files, environments or command lines, not the host's logs.
#
# Runs in a private D-Bus session with its own unlocked gnome-keyring (it re-executes itself).
# Environment (set by meson): CORRAL_BUILD_DIR, CORRAL_SOURCE_DIR.
# Exit: 0 pass, 1 fail, 77 skip (no QEMU/libvirt here, unless CORRAL_REQUIRE_VM=1).
set -uo pipefail

log() { echo "test-vm-egress: $*" >&2; }
fail() {
	log "FAIL: $*"
	if [ -n "${STATE:-}" ]; then
		tail -20 "$STATE"/corral/vms/etest/egressd.log 2>/dev/null >&2
		tail -5 "$STATE"/corral/vms/etest/egress.jsonl 2>/dev/null >&2
		grep -a 'corral-init\|netproxy' "$STATE"/corral/vms/etest/console.log 2>/dev/null | tail -10 >&2
	fi
	exit 1
}
skip() {
	if [ "${CORRAL_REQUIRE_VM:-}" = 1 ]; then fail "VMs are required here: $*"; fi
	log "SKIP: $*"
	exit 77
}

CTL=${CORRAL_BUILD_DIR:?}/app/corralctl
SRC=${CORRAL_SOURCE_DIR:?}
[ -x "$CTL" ] || skip "no corralctl at $CTL"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed"

# A keychain of our own (ENVIRONMENT.md's recipe); images stay in the usual cache.
if [ -z "${CORRAL_KEYCHAIN_TEST_DIR:-}" ]; then
	command -v dbus-run-session >/dev/null && command -v gnome-keyring-daemon >/dev/null ||
		skip "dbus-run-session or gnome-keyring-daemon missing (tools/setup-deps --tests)"
	CORRAL_KEYCHAIN_TEST_DIR=$(mktemp -d /tmp/corral-vm-egress-keyring.XXXXXX)
	export CORRAL_KEYCHAIN_TEST_DIR
	export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache}
	export XDG_DATA_HOME=$CORRAL_KEYCHAIN_TEST_DIR/data XDG_RUNTIME_DIR=$CORRAL_KEYCHAIN_TEST_DIR/run
	mkdir -p -m 0700 "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR"
	exec dbus-run-session -- sh -c 'echo -n corral-test | gnome-keyring-daemon --unlock --components=secrets >/dev/null || exit 1; "$0" "$@"; rc=$?; rm -rf "$CORRAL_KEYCHAIN_TEST_DIR"; exit $rc' "$0" "$@"
fi

CANARY=corral-canary-vm-4e1b9d07c2
STATE=/tmp/corral-vm-egress
export XDG_STATE_HOME=$STATE
DATA=$(mktemp -d /tmp/corral-vm-egress-data.XXXXXX)
VM_DIR=$STATE/corral/vms/etest
ORIGIN_PID=
cleanup() {
	"$CTL" vm destroy etest >/dev/null 2>&1
	"$CTL" vm rm etest >/dev/null 2>&1
	"$CTL" secret rm GITHUB_TOKEN >/dev/null 2>&1
	pkill -f "corral-egressd --connect $STATE" 2>/dev/null
	pkill -f "corral-fsd --connect $STATE" 2>/dev/null
	[ -n "$ORIGIN_PID" ] && kill "$ORIGIN_PID" 2>/dev/null
	rm -rf "$DATA" "$STATE"
}
trap cleanup EXIT
"$CTL" vm destroy etest >/dev/null 2>&1
"$CTL" vm rm etest >/dev/null 2>&1

# --- the host side: certificates, loopback servers, a package index, a git repository -------

mkdir -p "$DATA/certs" "$DATA/www/simple/corral-demo" "$DATA/www/files"
sh "$SRC/keychain-bridge/testing/make-test-certs.sh" "$DATA/certs" host.corral.internal ||
	fail "cannot make test certificates"
export CORRAL_EGRESS_CA_FILE=$DATA/certs/ca.pem
python3 - "$DATA/www" <<'PY' || fail "cannot build the test wheel"
import os, sys, zipfile
www = sys.argv[1]
name = "corral_demo-1.0-py3-none-any.whl"
with zipfile.ZipFile(os.path.join(www, "files", name), "w") as z:
    z.writestr("corral_demo/__init__.py", "VALUE = 42\n")
    z.writestr("corral_demo-1.0.dist-info/METADATA",
               "Metadata-Version: 2.1\nName: corral-demo\nVersion: 1.0\n")
    z.writestr("corral_demo-1.0.dist-info/WHEEL",
               "Wheel-Version: 1.0\nGenerator: corral-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("corral_demo-1.0.dist-info/RECORD", "")
with open(os.path.join(www, "simple", "corral-demo", "index.html"), "w") as f:
    f.write(f'<html><body><a href="/files/{name}">{name}</a></body></html>\n')
PY
git init -q --bare "$DATA/www/git/repo.git" && (
	cd "$DATA" && git init -q work && cd work &&
		echo hi >readme && git add readme &&
		git -c user.name=t -c user.email=t@t commit -qm init &&
		git push -q "$DATA/www/git/repo.git" HEAD:refs/heads/main
) && git -C "$DATA/www/git/repo.git" update-server-info || fail "cannot make the git repository"

python3 "$SRC/tests/vm/egress-origin.py" "$DATA" "$DATA/certs" &
ORIGIN_PID=$!
for _ in $(seq 100); do [ -e "$DATA/ports" ] && break; sleep 0.1; done
[ -e "$DATA/ports" ] || fail "the origin servers did not start"
HTTPS=$(awk '$1 == "https" { print $2 }' "$DATA/ports")
HTTP=$(awk '$1 == "http" { print $2 }' "$DATA/ports")
DENIED=$(awk '$1 == "denied" { print $2 }' "$DATA/ports")

# --- the person's side: a secret, a VM, a policy ----------------------------------------------

printf '%s' "$CANARY" | "$CTL" secret set GITHUB_TOKEN --host host.corral.internal >"$DATA/ctl.out" 2>&1 ||
	fail "corralctl secret set: $(cat "$DATA/ctl.out")"
log "creating a standard VM"
"$CTL" vm create etest --image standard >>"$DATA/ctl.out" 2>&1 ||
	skip "cannot create a VM here: $(tail -3 "$DATA/ctl.out")"
# The host's loopback is host.corral.internal from inside the VM (its own localhost is its own).
for rule in "host.corral.internal:$HTTPS" "host.corral.internal:$HTTP"; do
	"$CTL" net allow etest "$rule" >>"$DATA/ctl.out" 2>&1 || fail "corralctl net allow $rule"
done

run() { "$CTL" exec etest -- sh -c "$1"; }
# The guest proxy writes net.env once it has the session.
for _ in $(seq 150); do
	run 'test -s /run/corral/net.env' 2>/dev/null && break
	sleep 0.2
done
run 'test -s /run/corral/net.env' || fail "the guest proxy never got a session"

# --- in the VM ---------------------------------------------------------------------------------

out=$(run 'ls /sys/class/net') || fail "cannot list network interfaces"
[ "$out" = lo ] || fail "the VM has network interfaces besides lo: $out"
out=$(run 'echo "$GITHUB_TOKEN"')
case $out in corral-ph-*) ;; *) fail "GITHUB_TOKEN in the guest is '$out', not a placeholder" ;; esac

log "curl through the proxy, credential injected for the bound host"
out=$(run "curl -sS --fail https://host.corral.internal:$HTTPS/hello -H \"Authorization: Bearer \$GITHUB_TOKEN\"") ||
	fail "curl to the bound host failed: $out"
[ "$out" = "hello from https" ] || fail "curl got '$out'"
grep -qi "\"Authorization\": \"Bearer $CANARY\"" "$DATA/origin.jsonl" ||
	fail "the bound host did not receive the real secret"

log "Python, git and Node.js trust the session CA"
out=$(run "python3 -c 'import urllib.request; print(urllib.request.urlopen(\"https://host.corral.internal:$HTTPS/hello\").read().decode().strip())'") ||
	fail "python could not fetch over TLS: $out"
[ "$out" = "hello from https" ] || fail "python got '$out'"
out=$(run "git ls-remote https://host.corral.internal:$HTTPS/git/repo.git") || fail "git ls-remote failed: $out"
grep -q 'refs/heads/main' <<<"$out" || fail "git ls-remote listed '$out'"
# Node.js has no proxy support of its own: a CONNECT by hand, then TLS with its CA list.
out=$(run "node -e '
const http = require(\"http\"), tls = require(\"tls\");
const u = new URL(process.env.HTTPS_PROXY);
const auth = Buffer.from(decodeURIComponent(u.username) + \":\" + decodeURIComponent(u.password)).toString(\"base64\");
http.request({host: u.hostname, port: u.port, method: \"CONNECT\", path: \"host.corral.internal:$HTTPS\",
              headers: {\"Host\": \"host.corral.internal:$HTTPS\", \"Proxy-Authorization\": \"Basic \" + auth}})
  .on(\"connect\", (res, socket) => {
    if (res.statusCode !== 200) { console.log(\"proxy said \" + res.statusCode); process.exit(1); }
    const s = tls.connect({socket, servername: \"host.corral.internal\"}, () => { console.log(s.authorized ? \"trusted\" : \"untrusted\"); s.end(); });
    s.on(\"error\", e => { console.log(\"error \" + e.message); process.exit(1); });
  }).end();'") || fail "node could not connect: $out"
[ "$out" = trusted ] || fail "node said '$out'"

log "pip download from a plain-HTTP index"
out=$(run "cd /tmp && pip download --no-deps --index-url http://host.corral.internal:$HTTP/simple/ --trusted-host host.corral.internal -d dl corral-demo 2>&1 && ls dl") ||
	fail "pip download failed: $out"
grep -q 'corral_demo-1.0-py3-none-any.whl' <<<"$out" || fail "pip downloaded '$out'"

log "refusals: a host no rule allows, a placeholder to an unbound host, a real-looking token"
out=$(run "curl -sS -D - -o /dev/null http://host.corral.internal:$DENIED/hello") || true
grep -q '^HTTP/1.1 403' <<<"$out" || fail "a host with no rule was not refused: $out"
grep -qi '^X-Corral-Blocked:' <<<"$out" || fail "the refusal does not name its rule: $out"
body=$(run "curl -sS http://host.corral.internal:$DENIED/hello") || true
grep -q 'blocked by sandbox' <<<"$body" || fail "the refusal does not explain itself: $body"
grep -q '"server": "denied"' "$DATA/origin.jsonl" && fail "a denied host received a request"
out=$(run "curl -sS -o /dev/null -w '%{http_code}' http://host.corral.internal:$HTTP/hello -H \"Authorization: Bearer \$GITHUB_TOKEN\"") || true
[ "$out" = 403 ] || fail "a placeholder went to a host it is not bound to (status $out)"
out=$(run "curl -sS -D - -o /dev/null http://host.corral.internal:$HTTP/hello -H 'Authorization: Bearer ghp_notaplaceholder'") || true
grep -qi 'X-Corral-Blocked: not-a-placeholder' <<<"$out" ||
	fail "the guest proxy let a non-placeholder credential through: $out"
out=$(run "curl -sS -D - -o /dev/null --proxy http://127.0.0.1:1023 http://host.corral.internal:$HTTP/hello") || true
grep -q '^HTTP/1.1 407' <<<"$out" || fail "the guest proxy served a client without its token: $out"

log "a policy change applies at once"
"$CTL" net deny etest "host.corral.internal:$HTTP" >>"$DATA/ctl.out" 2>&1 || fail "corralctl net deny"
sleep 1
out=$(run "curl -sS -o /dev/null -w '%{http_code}' http://host.corral.internal:$HTTP/hello") || true
[ "$out" = 403 ] || fail "a denied host still answered (status $out)"

log "the canary is nowhere in the guest"
# The pattern matches the canary without containing it (else grep's own command line would).
PATTERN="${CANARY%?}[${CANARY: -1}]"
out=$(run "grep -rIl '$PATTERN' /etc /run /tmp /home /root /var /usr/local /workspace 2>/dev/null; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -c '$PATTERN'") || true
[ "$out" = 0 ] || fail "the canary is in the guest: $out"
out=$(run env) || fail "env failed"
grep -q "$CANARY" <<<"$out" && fail "the canary is in the guest's environment"

log "the network proxy restarts with a new session"
old=$(run "cat /run/corral/net.env")
pkill -f "corral-egressd --connect $VM_DIR" || fail "no corral-egressd for the VM"
sleep 0.5
for _ in $(seq 100); do
	new=$(run "cat /run/corral/net.env" 2>/dev/null) && [ "$new" != "$old" ] && break
	sleep 0.2
done
[ "$new" != "$old" ] || fail "the guest never got a new session"
out=$(run "curl -sS --fail https://host.corral.internal:$HTTPS/hello -H \"Authorization: Bearer \$GITHUB_TOKEN\"") ||
	fail "curl after the restart failed: $out"

log "the canary is nowhere on the host but at the bound host's server"
for f in "$VM_DIR"/egress.jsonl "$VM_DIR"/egressd.log "$VM_DIR"/console.log "$DATA/ctl.out"; do
	[ -e "$f" ] || continue
	grep -q "$CANARY" "$f" && fail "the canary is in $f"
done
grep -Eq '"credential": ?"GITHUB_TOKEN"' "$VM_DIR/egress.jsonl" ||
	fail "the audit log does not name the credential it used"
python3 - "$DATA/origin.jsonl" "$CANARY" <<'PY' || fail "the canary reached a server other than the bound host"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if sys.argv[2] in line and r["server"] != "https":
        sys.exit(1)
PY
log "PASS"
