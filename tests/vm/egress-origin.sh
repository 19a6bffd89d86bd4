# Sourced by VM tests that reach loopback servers on the host: start_origin DATA makes test
# certificates for host.corral.internal in DATA/certs (corral-egressd trusts their CA through
# CORRAL_EGRESS_CA_FILE, exported), starts tests/vm/egress-origin.py on DATA (its pid in
# ORIGIN_PID, for the test's cleanup) and sets HTTPS, HTTP, DENIED and OTHER to its ports.
# Needs fail() and SRC from the test.
start_origin() {
	mkdir -p "$1/certs" "$1/www"
	sh "$SRC/tests/fakes/egress/make-test-certs.sh" "$1/certs" host.corral.internal ||
		fail "cannot make test certificates"
	export CORRAL_EGRESS_CA_FILE=$1/certs/ca.pem
	python3 "$SRC/tests/vm/egress-origin.py" "$1" "$1/certs" &
	ORIGIN_PID=$!
	for _ in $(seq 100); do [ -e "$1/ports" ] && break; sleep 0.1; done
	[ -e "$1/ports" ] || fail "the origin servers did not start"
	HTTPS=$(awk '$1 == "https" { print $2 }' "$1/ports")
	HTTP=$(awk '$1 == "http" { print $2 }' "$1/ports")
	DENIED=$(awk '$1 == "denied" { print $2 }' "$1/ports")
	OTHER=$(awk '$1 == "other" { print $2 }' "$1/ports")
}
