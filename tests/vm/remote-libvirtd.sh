# remote-libvirtd.sh — sourced by the remote-URI test and benchmark: a private libvirtd on
# loopback TCP that plays "the other machine" (qemu+tcp://127.0.0.1:PORT/system, which Corral
# treats as remote: nothing of this machine's files is given to QEMU).
#
#   remote_libvirtd_start RUN_DIR   sets REMOTE_URI; returns 1 with REMOTE_WHY when it cannot
#   remote_libvirtd_stop            removes Corral's storage pool there and stops the daemons
#
# Needs root (a system-mode libvirtd) and libvirt-daemon-system (its libvirt-qemu user). The
# QEMU driver's state is machine-wide: a libvirtd that runs already is not replaced.

REMOTE_URI=
REMOTE_WHY=
REMOTE_RUN=
REMOTE_VIRTLOGD_PID=

remote_virtlogd_answers() {
	python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("/run/libvirt/virtlogd-sock")' \
		2>/dev/null
}

remote_libvirtd_start() {
	REMOTE_RUN=$1
	local port
	[ "$(id -u)" = 0 ] || { REMOTE_WHY="a system-mode libvirtd needs root"; return 1; }
	command -v libvirtd >/dev/null && command -v virsh >/dev/null ||
		{ REMOTE_WHY="libvirtd or virsh missing"; return 1; }
	id libvirt-qemu >/dev/null 2>&1 || { REMOTE_WHY="no libvirt-qemu user (libvirt-daemon-system)"; return 1; }
	pgrep -x -u 0 libvirtd >/dev/null && { REMOTE_WHY="a system libvirtd runs already"; return 1; }
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	cat >"$REMOTE_RUN/libvirtd.conf" <<EOF
listen_tls = 0
listen_tcp = 1
listen_addr = "127.0.0.1"
tcp_port = "$port"
auth_tcp = "none"
unix_sock_dir = "$REMOTE_RUN"
log_outputs = "3:file:$REMOTE_RUN/libvirtd.log"
EOF
	# What libvirtd needs is a socket that answers: a virtlogd can outlive its socket (another one
	# that was started and stopped removes it), and a socket can outlive its virtlogd (a killed
	# one leaves it behind). Either way QEMU cannot start.
	if ! remote_virtlogd_answers; then
		rm -f /run/libvirt/virtlogd-sock
		virtlogd -d -p "$REMOTE_RUN/virtlogd.pid" || { REMOTE_WHY="cannot start virtlogd"; return 1; }
		for _ in $(seq 50); do [ -s "$REMOTE_RUN/virtlogd.pid" ] && break; sleep 0.1; done
		REMOTE_VIRTLOGD_PID=$(cat "$REMOTE_RUN/virtlogd.pid" 2>/dev/null)
	fi
	libvirtd -d -l -f "$REMOTE_RUN/libvirtd.conf" -p "$REMOTE_RUN/libvirtd.pid" ||
		{ REMOTE_WHY="cannot start libvirtd"; return 1; }
	REMOTE_URI="qemu+tcp://127.0.0.1:$port/system"
	for _ in $(seq 100); do virsh -q -c "$REMOTE_URI" version >/dev/null 2>&1 && return 0; sleep 0.1; done
	REMOTE_WHY="libvirtd does not answer at $REMOTE_URI"
	return 1
}

remote_libvirtd_stop() {
	local v
	if [ -n "$REMOTE_URI" ] && [ -e "$REMOTE_RUN/libvirtd.pid" ]; then
		for v in $(virsh -q -c "$REMOTE_URI" vol-list corral 2>/dev/null | awk '{print $1}'); do
			virsh -q -c "$REMOTE_URI" vol-delete --pool corral "$v" >/dev/null 2>&1
		done
		virsh -q -c "$REMOTE_URI" pool-destroy corral >/dev/null 2>&1
		virsh -q -c "$REMOTE_URI" pool-delete corral >/dev/null 2>&1
		virsh -q -c "$REMOTE_URI" pool-undefine corral >/dev/null 2>&1
		kill "$(cat "$REMOTE_RUN/libvirtd.pid")" 2>/dev/null
	fi
	if [ -n "$REMOTE_VIRTLOGD_PID" ] && kill "$REMOTE_VIRTLOGD_PID" 2>/dev/null; then
		for _ in $(seq 50); do kill -0 "$REMOTE_VIRTLOGD_PID" 2>/dev/null || break; sleep 0.1; done
		# Ours is gone: the socket it leaves would refuse the next one's QEMU.
		remote_virtlogd_answers || rm -f /run/libvirt/virtlogd-sock
	fi
	REMOTE_VIRTLOGD_PID=
	REMOTE_URI=
}
