#!/usr/bin/env bash
# Makes a throwaway CA and a server certificate for localhost/127.0.0.1 in DIR:
# ca.pem (what --cacert takes), server.pem (leaf + CA chain), server.key.
set -euo pipefail
dir=$1
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=loadlab bench CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=localhost" -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n' > "$dir/ext.cnf"
openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 2 -extfile "$dir/ext.cnf" -out "$dir/leaf.pem" 2>/dev/null
cat "$dir/leaf.pem" "$dir/ca.pem" > "$dir/server.pem"
