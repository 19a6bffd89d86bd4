#!/bin/sh
# make-test-certs.sh DIR NAME... — a throwaway test CA (DIR/ca.pem, DIR/ca.key) and, for each
# NAME, DIR/NAME.pem + DIR/NAME.key signed by it (subjectAltName DNS:NAME). Tests only.
set -eu
dir=$1; shift
cd "$dir"
openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
  -keyout ca.key -out ca.pem -days 2 -subj /CN=corral-test-upstream-ca \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
for name in "$@"; do
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$name.key" -out "$name.csr" -subj "/CN=$name" 2>/dev/null
  printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$name" > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
    -out "$name.pem" -days 2 -extfile "$name.ext" 2>/dev/null
done
