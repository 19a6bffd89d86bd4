#!/bin/bash
# The in-VM network figure: 64 MiB down and up with curl inside a booted standard VM, through
# the whole path (curl -> corral-netproxy -> virtio-serial port -> corral-egressd -> loopback
# origin on the host), beside the same transfers with curl on the host through squid as a plain
# forward proxy to the same origin, in the same run. Under TCG the guest's CPU (curl, the
# in-VM proxy, the port's driver) bounds the in-VM figure; bench-egress has the host path.
#
# Environment (set by meson): CORRAL_BUILD_DIR, CORRAL_SOURCE_DIR.
set -uo pipefail

CTL=${CORRAL_BUILD_DIR:?}/app/corralctl
SRC=${CORRAL_SOURCE_DIR:?}
log() { echo "bench-egress-vm: $*" >&2; }
command -v qemu-system-x86_64 >/dev/null || { echo "no QEMU here: skipped"; exit 0; }
command -v squid >/dev/null || { echo "squid is not installed (tools/setup-deps --tests): skipped"; exit 0; }

STATE=/tmp/corral-bench-egress-vm
export XDG_STATE_HOME=$STATE
DATA=$(mktemp -d /tmp/corral-bench-egress-vm-data.XXXXXX)
PIDS=()
cleanup() {
	"$CTL" vm destroy ebench >/dev/null 2>&1
	"$CTL" vm rm ebench >/dev/null 2>&1
	pkill -f "corral-egressd --connect $STATE" 2>/dev/null
	pkill -f "corral-fsd --connect $STATE" 2>/dev/null
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$DATA" "$STATE"
}
trap cleanup EXIT
cleanup_vm() { "$CTL" vm destroy ebench >/dev/null 2>&1; "$CTL" vm rm ebench >/dev/null 2>&1; }
cleanup_vm

# The origin: /zeros?n=BYTES and POST /discard (Content-Length), in 1 MiB pieces.
cat >"$DATA/origin.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        n = int(self.path.split("n=")[1])
        self.send_response(200)
        self.send_header("Content-Length", str(n))
        self.end_headers()
        chunk = b"\0" * (1 << 20)
        while n > 0:
            k = min(n, len(chunk))
            self.wfile.write(chunk[:k])
            n -= k
    def do_POST(self):
        n = int(self.headers["Content-Length"])
        while n > 0:
            n -= len(self.rfile.read(min(n, 1 << 20)))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
PY
coproc ORIGIN { python3 "$DATA/origin.py"; }
PIDS+=("$ORIGIN_PID")
read -r PORT <&"${ORIGIN[0]}"

# squid as a plain forward proxy (no cache) on a free port.
SQUID_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$DATA/squid"
chmod 0777 "$DATA/squid" # squid writes its log as its own user
cat >"$DATA/squid.conf" <<EOF
http_port 127.0.0.1:$SQUID_PORT
http_access allow localhost
http_access deny all
cache deny all
cache_dir null /tmp
pid_filename $DATA/squid/squid.pid
access_log none
cache_log $DATA/squid/cache.log
coredump_dir $DATA/squid
shutdown_lifetime 0 seconds
EOF
squid -N -f "$DATA/squid.conf" &
PIDS+=($!)
for _ in $(seq 100); do
	curl -s -o /dev/null -x "http://127.0.0.1:$SQUID_PORT" "http://127.0.0.1:$PORT/zeros?n=1" && break
	sleep 0.1
done

SIZE=$((64 * 1024 * 1024))
head -c "$SIZE" /dev/zero >"$DATA/up"
mib() { python3 -c "print(f'{float(\"$1\") / 1048576:.1f}')"; }
best() { sort -g | tail -1; } # best of the runs (the machine is shared)

host_down=$(for _ in 1 2 3; do
	curl -s -o /dev/null -w '%{speed_download}\n' -x "http://127.0.0.1:$SQUID_PORT" "http://127.0.0.1:$PORT/zeros?n=$SIZE"
done | best)
host_up=$(for _ in 1 2 3; do
	curl -s -o /dev/null -w '%{speed_upload}\n' -x "http://127.0.0.1:$SQUID_PORT" --data-binary "@$DATA/up" "http://127.0.0.1:$PORT/discard"
done | best)

log "booting a standard VM"
"$CTL" vm create ebench --image standard >"$DATA/ctl.out" 2>&1 || { cat "$DATA/ctl.out"; echo "cannot create a VM: skipped"; exit 0; }
"$CTL" net allow ebench "host.corral.internal:$PORT" >/dev/null || exit 1
run() { "$CTL" exec ebench -- sh -c "$1"; }
for _ in $(seq 150); do run 'test -s /run/corral/net.env' 2>/dev/null && break; sleep 0.2; done
run "head -c $SIZE /dev/zero > /tmp/up" || exit 1
vm_down=$(for _ in 1 2 3; do
	run "curl -s -o /dev/null -w '%{speed_download}\n' http://host.corral.internal:$PORT/zeros?n=$SIZE"
done | best)
vm_up=$(for _ in 1 2 3; do
	run "curl -s -o /dev/null -w '%{speed_upload}\n' --data-binary @/tmp/up http://host.corral.internal:$PORT/discard"
done | best)
# Per request: 20 small requests from one Python process in the guest (no process start in
# the figure; the host path's added latency is bench egress's).
vm_req=$(run "python3 -c '
import time, urllib.request
u = \"http://host.corral.internal:$PORT/zeros?n=1\"
urllib.request.urlopen(u).read()
t = time.monotonic()
for _ in range(20): urllib.request.urlopen(u).read()
print((time.monotonic() - t) / 20 * 1000)'")
printf '%-44s download %7s MiB/s  upload %7s MiB/s\n' \
	"host: curl -> squid -> origin" "$(mib "$host_down")" "$(mib "$host_up")"
printf '%-44s download %7s MiB/s  upload %7s MiB/s  request %6.2f ms\n' \
	"VM (TCG): curl -> netproxy -> port -> egressd" "$(mib "$vm_down")" "$(mib "$vm_up")" "$vm_req"
python3 -c "print('in-VM path vs host squid: download ratio %.2f, upload ratio %.2f (host-path ratios: bench egress)' % ($vm_down / $host_down, $vm_up / $host_up))"
