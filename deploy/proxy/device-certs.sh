#!/usr/bin/env bash
# Issue Furrow device certificates with openssl.
#
#   device-certs.sh ca DIR                 create the device CA in DIR (ca.pem, ca.key)
#   device-certs.sh issue DIR UUID [DAYS]  issue DIR/device-UUID.pem and .key, CN device:UUID
#
# ca.pem is what the proxy checks devices against (FURROW_PROXY_DEVICE_CA);
# keep ca.key offline. Each device gets its own key and certificate.
set -euo pipefail

usage() { sed -n '4,5p' "$0" | sed 's/^# *//' >&2; exit 2; }

ca() {
  local dir=$1
  mkdir -p "$dir"
  if [ -e "$dir/ca.key" ]; then
    echo "device-certs: $dir/ca.key exists; refusing to replace the CA" >&2
    exit 1
  fi
  (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/ca.key")
  openssl req -x509 -new -key "$dir/ca.key" -out "$dir/ca.pem" -days 3650 \
    -subj "/O=Furrow/CN=Furrow device CA" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign"
  echo "device CA: $dir/ca.pem"
}

issue() {
  local dir=$1 id=$2 days=${3:-825}
  if ! [[ $id =~ ^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$ ]]; then
    echo "device-certs: $id is not a device UUID" >&2
    exit 2
  fi
  id=${id,,}
  local base="$dir/device-$id" ext
  ext=$(mktemp)
  trap 'rm -f "$ext" "$base.csr"' RETURN
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=clientAuth" > "$ext"
  (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$base.key")
  openssl req -new -key "$base.key" -out "$base.csr" -subj "/CN=device:$id"
  openssl x509 -req -in "$base.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days "$days" -extfile "$ext" -out "$base.pem" 2>/dev/null
  echo "device certificate: $base.pem (key $base.key)"
}

case "${1:-}" in
  ca) [ $# -eq 2 ] || usage; ca "$2" ;;
  issue) [ $# -ge 3 ] && [ $# -le 4 ] || usage; issue "$2" "$3" "${4:-825}" ;;
  *) usage ;;
esac
