#!/bin/bash
# The network of a booted standard VM, through corralctl as a person would use it: a secret in
# the keychain, a policy (corralctl net), and curl, Python, git, Node.js and pip inside the VM
# reaching loopback servers on the host through the in-VM proxy and corral-egressd. The canary
# (the secret's value) must reach the bound host's server and nothing else: not the guest's
# files, environments or command lines, not the host's logs; not even when the bound host
# reflects it back encoded (base64, hex, reversed, JSON, a Location, chunks, gzip, ranges), nor
# through a redirect to another port. A guest that sends the real value turns its network off.
#
# Runs with a session bus of its own where a desktop has it ($XDG_RUNTIME_DIR/bus) and an
# unlocked gnome-keyring on it (it re-executes itself).
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

# A keychain of our own; images stay in the usual cache.
. "$SRC/tests/vm/keychain-session.sh"
keychain_session "$0" "$@"

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

mkdir -p "$DATA/www/simple/corral-demo" "$DATA/www/files"
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

. "$SRC/tests/vm/egress-origin.sh"
start_origin "$DATA"

# --- the person's side: a secret, a VM, a policy ----------------------------------------------

# Bound to one port of the name (a binding without a port means 443).
printf '%s' "$CANARY" | "$CTL" secret set GITHUB_TOKEN --host "host.corral.internal:$HTTPS" >"$DATA/ctl.out" 2>&1 ||
	fail "corralctl secret set: $(cat "$DATA/ctl.out")"
log "creating a standard VM"
"$CTL" vm create etest --image standard >>"$DATA/ctl.out" 2>&1 ||
	skip "cannot create a VM here: $(tail -3 "$DATA/ctl.out")"
# The host's loopback is host.corral.internal from inside the VM (its own localhost is its own).
for rule in "host.corral.internal:$HTTPS" "host.corral.internal:$HTTP" "host.corral.internal:$OTHER"; do
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
# net.env holds the proxy token: root's only (the agent reads it and gives commands its values)
out=$(run 'stat -c %a:%U /run/corral/net.env') || fail "cannot stat net.env"
[ "$out" = 600:root ] || fail "net.env is $out, not 600:root"
run 'cat /run/corral/net.env' >/dev/null 2>&1 && fail "a command can read net.env"
out=$(run 'echo "$HTTPS_PROXY"')
case $out in http://corral:*@127.0.0.1:*) ;; *) fail "commands lost the proxy variables: '$out'" ;; esac

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

log "a bound host that reflects the secret back encoded"
# Decodes what came back (independently of the proxy) and fails if the canary is in it.
cat >"$DATA/check-echo.py" <<'PY'
import base64, binascii, json, re, sys, urllib.parse
form, canary = sys.argv[1], sys.argv[2].encode()
out = sys.stdin.buffer.read()
head, _, body = out.partition(b"\r\n\r\n")
if form in ("gzip", "partial"):
    ok = out.startswith(b"HTTP/1.1 502") and b"X-Corral-Blocked: response-unmaskable" in head
    sys.exit(0 if ok and canary not in out else f"{form}: not refused: {out[:300]!r}")
if not (out.startswith(b"HTTP/1.1 200") or out.startswith(b"HTTP/1.1 302")) or b"****" not in out:
    sys.exit(f"{form}: no masked reply: {out[:300]!r}")
texts = [out]
if form.startswith("base64"):
    t = body.strip().replace(b"*", b"A").replace(b"-", b"+").replace(b"_", b"/")
    texts.append(base64.b64decode(t + b"=" * (-len(t) % 4)))
elif form == "hex":
    texts.append(binascii.unhexlify(re.sub(rb"[^0-9a-fA-F]", b"0", body.strip())))
elif form == "reversed":
    texts.append(body[::-1])
elif form == "json":
    texts.append(json.loads(body)["headers"].encode())
elif form == "location":
    texts.append(urllib.parse.unquote_to_bytes(head))
for t in texts:
    if canary in t:
        sys.exit(f"{form}: the secret came back")
PY
check_echo() { python3 "$DATA/check-echo.py" "$1" "$CANARY"; }
for form in base64 base64url base64\&pad=1 base64\&pad=2 hex reversed json location chunked gzip partial; do
	out=$(run "curl -si --suppress-connect-headers --compressed 'https://host.corral.internal:$HTTPS/reflect?form=$form' -H \"Authorization: Bearer \$GITHUB_TOKEN\"") ||
		fail "curl /reflect?form=$form failed: $out"
	check_echo "${form%%&*}" <<<"$out" || fail "the reflected secret leaked ($form)"
done
# No Range reaches the origin with a secret (a byte at a time gave it away).
out=$(run "curl -si --suppress-connect-headers -r 30-31 'https://host.corral.internal:$HTTPS/reflect?form=range' -H \"Authorization: Bearer \$GITHUB_TOKEN\"")
check_echo range <<<"$out" || fail "a range request with the secret was not made whole"
grep -q '"Range"' <<<"$(grep 'form=range' "$DATA/origin.jsonl")" && fail "a Range header reached the origin with the secret"

log "a redirect to another port of the bound name gets no secret"
# That port is not intercepted: the guest must trust the origin's own (test) CA there.
run "cat >/tmp/origin-ca.pem <<'EOF'
$(cat "$DATA/certs/ca.pem")
EOF" || fail "cannot copy the test CA into the VM"
out=$(run "python3 -c '
import os, ssl, urllib.request
ctx = ssl.create_default_context()
ctx.load_verify_locations(\"/tmp/origin-ca.pem\")
r = urllib.request.Request(\"https://host.corral.internal:$HTTPS/reflect?form=location\")
r.add_header(\"Authorization\", \"Bearer \" + os.environ[\"GITHUB_TOKEN\"])
class Go(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, hdrs, newurl):
        return super().redirect_request(req, fp, code, msg, hdrs, \"https://host.corral.internal:$OTHER/hello\")
print(urllib.request.build_opener(Go, urllib.request.HTTPSHandler(context=ctx)).open(r).read().decode().strip())'") ||
	fail "urllib did not follow: $out"
[ "$out" = "hello from other" ] || fail "urllib got '$out'"
other=$(grep '"server": "other"' "$DATA/origin.jsonl")
grep -q "Bearer corral-ph-" <<<"$other" ||
	fail "the other port did not get the placeholder"
grep -q "$CANARY" <<<"$other" && fail "the other port got the secret"

log "pip download from a plain-HTTP index"
out=$(run "cd /tmp && pip download --no-deps --index-url http://host.corral.internal:$HTTP/simple/ --trusted-host host.corral.internal -d dl corral-demo 2>&1 && ls dl") ||
	fail "pip download failed: $out"
grep -q 'corral_demo-1.0-py3-none-any.whl' <<<"$out" || fail "pip downloaded '$out'"

# Everyday work under the second wall (seccomp, Landlock: SECURITY.md A7, A8), as every command
# above already ran: a virtual environment and pip install through the proxy, git clone and commit,
# a Node.js script, make of a small C program.
log "everyday work under the seccomp filter and Landlock: venv + pip install, git, node, make"
out=$(run 'grep "^Seccomp:" /proc/self/status') || fail "cannot read the command's status"
[ "$out" = "Seccomp:	2" ] || fail "commands do not run under the filter: $out"
out=$(run "cd ~ && python3 -m venv venv && venv/bin/pip install -q --index-url http://host.corral.internal:$HTTP/simple/ --trusted-host host.corral.internal corral-demo 2>&1 && venv/bin/pip list 2>/dev/null | grep -i corral") ||
	fail "venv + pip install failed under the filter: $out"
grep -qi 'corral.demo' <<<"$out" || fail "pip install left '$out'"
out=$(run "cd /tmp && git clone -q -b main https://host.corral.internal:$HTTPS/git/repo.git clone && cd clone && echo more >>readme && git -c user.name=t -c user.email=t@t commit -qam more && git log --oneline | wc -l") ||
	fail "git clone + commit failed under the filter: $out"
[ "$out" = 2 ] || fail "git log counted '$out'"
out=$(run "cd /tmp && printf 'const fs = require(\"fs\"); fs.writeFileSync(\"n.txt\", String(6 * 7)); console.log(fs.readFileSync(\"n.txt\", \"utf8\"));' >s.js && node s.js") ||
	fail "node failed under the filter: $out"
[ "$out" = 42 ] || fail "node printed '$out'"
out=$(run "mkdir -p /tmp/hello && cd /tmp/hello && echo 'int main(void) { return 6 * 7; }' >hello.c && printf 'hello: hello.c\n\t\$(CC) -O2 -o \$@ hello.c\n' >Makefile && make -s && { ./hello; echo \$?; }") ||
	fail "make of a small C program failed under the filter: $out"
[ "$out" = 42 ] || fail "the C program exited with '$out'"

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

log "the network proxy restarts with a new session, from a terminal whose D-Bus session ends"
old=$(run 'echo "$HTTPS_PROXY"')
pkill -f "corral-egressd --connect $VM_DIR" || fail "no corral-egressd for the VM"
sleep 0.5
# That terminal's bus has no keychain and is gone right after: the daemon finds the person's
# keychain on their own bus, and lives on.
dbus-run-session -- "$CTL" exec etest -- true >>"$DATA/ctl.out" 2>&1 || fail "corralctl exec in a terminal session"
sleep 1
pgrep -f "corral-egressd --connect $VM_DIR" >/dev/null || fail "the daemon died with the terminal's D-Bus session"
for _ in $(seq 100); do
	new=$(run 'echo "$HTTPS_PROXY"' 2>/dev/null) && [ "$new" != "$old" ] && break
	sleep 0.2
done
[ "$new" != "$old" ] || fail "the guest never got a new session"
before=$(grep -c "Bearer $CANARY" "$DATA/origin.jsonl")
out=$(run "curl -sS --fail https://host.corral.internal:$HTTPS/hello -H \"Authorization: Bearer \$GITHUB_TOKEN\"") ||
	fail "curl after the restart failed: $out"
[ "$(grep -c "Bearer $CANARY" "$DATA/origin.jsonl")" -gt "$before" ] ||
	fail "after the restart the secret was not injected"

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

# --- review and undo (issue 20) in the same VM ---------------------------------------------------
log "git checkout, git rebase and pip install -t in a shared folder, then undo all"
PROJ=$DATA/proj
mkdir -p "$PROJ" && (
	cd "$PROJ" && git init -q -b main && printf 'one\ntwo\n' >notes.txt && mkdir -p src &&
		printf 'print("hi")\n' >src/app.py && chmod 755 src/app.py && git add . &&
		git -c user.name=t -c user.email=t@t commit -qm init &&
		git checkout -qb topic && echo topic >>notes.txt &&
		git -c user.name=t -c user.email=t@t commit -qam topic && git checkout -q main &&
		echo main >src/extra.txt && git add src/extra.txt &&
		git -c user.name=t -c user.email=t@t commit -qm main && echo '*.whl' >>.git/info/exclude
) || fail "cannot make the project repository"
# A wheel made here (the VM has no network for pip): an installable package in the share.
python3 - "$PROJ/demo_pkg-1.0-py3-none-any.whl" <<'PY' || fail "cannot make the wheel"
import base64, hashlib, sys, zipfile
files = {"demo_pkg/__init__.py": b"VALUE = 42\n",
         "demo_pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
         "demo_pkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: corral-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
record = ""
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record += f"{name},sha256={digest},{len(data)}\n"
record += "demo_pkg-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for name, data in files.items():
        z.writestr(name, data)
    z.writestr("demo_pkg-1.0.dist-info/RECORD", record)
PY
# Every name under the folder with its type, mode, content hash or link target, and a file's
# modification time: the folder as it must be again after undo.
manifest() {
	python3 - "$1" <<'PY'
import hashlib, os, stat, sys
root = sys.argv[1]
for dirpath, dirs, files in os.walk(root):
    dirs.sort()
    for name in sorted(dirs + files):
        p = os.path.join(dirpath, name)
        st = os.lstat(p)
        rel = os.path.relpath(p, root)
        if stat.S_ISREG(st.st_mode):
            h = hashlib.sha256(open(p, "rb").read()).hexdigest()
            print(rel, "f", oct(st.st_mode & 0o7777), h, st.st_mtime_ns)
        elif stat.S_ISLNK(st.st_mode):
            print(rel, "l", os.readlink(p))
        else:
            print(rel, "d", oct(st.st_mode & 0o7777))
PY
}
manifest "$PROJ" >"$DATA/before.manifest"
"$CTL" share add etest "$PROJ" --mode rw >>"$DATA/ctl.out" 2>&1 || fail "share add the project"
out=$(run 'cd /workspace/proj && git config --global --add safe.directory /workspace/proj &&
	git checkout -q topic && git -c user.name=a -c user.email=a@a rebase -q main &&
	git checkout -q -b work && echo work >>notes.txt && chmod 600 notes.txt &&
	git -c user.name=a -c user.email=a@a commit -qam work && rm src/extra.txt &&
	mv src/app.py src/main.py && python3 -m pip install -q --no-index --no-deps -t vendor ./demo_pkg-1.0-py3-none-any.whl &&
	PYTHONPATH=vendor python3 -c "import demo_pkg; print(demo_pkg.VALUE)"' 2>&1) ||
	fail "git and pip in the share: $out"
[ "$(tail -1 <<<"$out")" = 42 ] || fail "the package did not install: $out"
manifest "$PROJ" >"$DATA/during.manifest"
cmp -s "$DATA/before.manifest" "$DATA/during.manifest" && fail "nothing changed in the share"
changes=$("$CTL" changes etest 2>&1) || fail "corralctl changes: $changes"
grep -q 'vendor/demo_pkg/__init__.py' <<<"$changes" || fail "the installed package is not listed: $changes"
grep -q 'proj/src/main.py' <<<"$changes" || fail "the move is not listed: $changes"
out=$("$CTL" undo etest --all 2>&1) || fail "corralctl undo --all: $out"
manifest "$PROJ" >"$DATA/after.manifest"
diff "$DATA/before.manifest" "$DATA/after.manifest" >&2 || fail "undo all did not put the share back as it was"
[ -z "$("$CTL" changes etest --json 2>/dev/null | tr -d '[]\n ')" ] || fail "changes are still listed after undo all"
out=$(run 'cd /workspace/proj && git log --oneline | wc -l && git status --porcelain | wc -l') ||
	fail "git in the share after undo: $out"
[ "$out" = "$(printf '2\n0')" ] || fail "the guest does not see the repository as it was: $out"
"$CTL" share rm etest proj >>"$DATA/ctl.out" 2>&1 || fail "share rm the project"

# Last: it puts the real value into the guest.
log "a guest that sends the real value turns its network off, and the person is told why"
out=$(run "curl -s -o /dev/null -w '%{http_code}' https://host.corral.internal:$HTTPS/hello -H 'X-Note: $CANARY'") || true
[ "$out" = 403 ] || fail "the real value from the guest was not refused (status $out)"
out=$(run "curl -sS -D - -o /dev/null http://host.corral.internal:$HTTP/hello") || true
grep -qi 'X-Corral-Blocked: session-ended' <<<"$out" || fail "the network stayed on: $out"
grep -q 'GITHUB_TOKEN' "$VM_DIR/network-off.txt" 2>/dev/null || fail "network-off.txt does not say why"
grep -q "$CANARY" "$VM_DIR/network-off.txt" "$VM_DIR/egressd.log" "$VM_DIR/egress.jsonl" &&
	fail "the canary is in the host's logs"
grep -q '"rule": *"secret-from-guest"' "$VM_DIR/egress.jsonl" || fail "the audit log does not say it"
log "PASS"
