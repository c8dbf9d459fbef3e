#!/usr/bin/env bash
# Issue and revoke Furrow device certificates with openssl.
#
#   device-certs.sh ca DIR                      create the device CA in DIR: ca.pem, ca.key, crl.pem
#   device-certs.sh issue DIR UUID [DAYS]       issue DIR/device-UUID.pem and .key, CN device:UUID
#   device-certs.sh revoke DIR UUID|CERT-FILE   revoke a device's certificates, rewrite DIR/crl.pem
#   device-certs.sh crl DIR [DAYS]              issue DIR/crl.pem again (it expires; default 1825 days)
#
# The proxy checks devices against ca.pem (PROXY_DEVICE_CA) and crl.pem, the
# certificate revocation list (PROXY_DEVICE_CRL); it needs nothing else from
# DIR. Beside them DIR holds the CA's key (ca.key) and its database: the
# openssl ca index of every certificate issued and revoked (index.txt,
# crlnumber) and a copy of each certificate issued (issued/SERIAL.pem).
# Keep DIR offline, where you issue and revoke, and copy ca.pem and crl.pem
# to the proxy. Each device gets its own key and certificate.
#
# A CRL is valid for a fixed time: once it expires, OpenSSL refuses every
# device certificate. `revoke` and `crl` write one valid for 1825 days (five
# years); `crl DIR` renews it without revoking anything. A CA made by an
# earlier version of this script, without a database, gets one on its first
# use.
set -euo pipefail

crl_days=1825

usage() { sed -n '4,7p' "$0" | sed 's/^# *//' >&2; exit 2; }
fail() { echo "device-certs: $*" >&2; exit 1; }

uuid_re='^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The openssl ca configuration of a CA directory, with paths relative to it:
# every openssl ca command runs in the CA's directory.
cat > "$tmp/ca.cnf" <<'EOF'
[ca]
default_ca = device_ca

[device_ca]
database = index.txt
new_certs_dir = issued
certificate = ca.pem
private_key = ca.key
crlnumber = crlnumber
rand_serial = yes
unique_subject = no
default_md = sha256
policy = device_policy

[device_policy]
commonName = supplied
EOF

# run CMD...: runs an openssl command quietly, showing its output on failure.
run() {
  local out
  if ! out=$("$@" 2>&1); then
    printf '%s\n' "$out" >&2
    fail "openssl failed: $*"
  fi
}

# use_ca DIR: enters the CA in DIR, creating its database if it has none.
use_ca() {
  local dir=$1
  [ -f "$dir/ca.pem" ] || fail "$dir/ca.pem does not exist; create the CA with: device-certs.sh ca $dir"
  [ -f "$dir/ca.key" ] || fail "$dir/ca.key does not exist: run this where the CA's key is kept"
  cd "$dir"
  [ -e index.txt ] || : > index.txt
  [ -e crlnumber ] || echo 01 > crlnumber
  mkdir -p issued
}

# gencrl DAYS: writes crl.pem of the CA in the current directory.
gencrl() {
  run openssl ca -batch -config "$tmp/ca.cnf" -gencrl -crldays "$1" -out "$tmp/crl.pem"
  # Rewritten in place rather than renamed over: compose mounts the file
  # itself, and a mount keeps showing a file that was replaced by a rename.
  cat "$tmp/crl.pem" > crl.pem
}

ca() {
  local dir=$1 f name
  for f in ca.key ca.pem index.txt; do
    if [ -e "$dir/$f" ]; then
      fail "$dir/$f exists; refusing to replace the CA (every device certificate would stop working)"
    fi
  done
  mkdir -p "$dir"
  # A name of its own: CRLs are matched to CAs by name, so two CAs of one
  # name (an old one and its successor, both trusted while devices move)
  # would have their lists confused.
  name="Furrow device CA $(date -u +%Y-%m-%d) $(openssl rand -hex 4)"
  (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/ca.key")
  openssl req -x509 -new -key "$dir/ca.key" -out "$dir/ca.pem" -days 3650 \
    -subj "/O=Furrow/CN=$name" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign"
  (use_ca "$dir"; gencrl "$crl_days")
  echo "device CA: $dir/ca.pem ($name), revocation list $dir/crl.pem (valid $crl_days days)"
}

issue() {
  local dir=$1 id=$2 days=$3
  [[ $id =~ $uuid_re ]] || { echo "device-certs: $id is not a device UUID" >&2; exit 2; }
  [[ $days =~ ^[1-9][0-9]*$ ]] || { echo "device-certs: $days is not a number of days" >&2; exit 2; }
  id=${id,,}
  (
    use_ca "$dir"
    printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
      "extendedKeyUsage=clientAuth" > "$tmp/device.ext"
    # The new key and certificate replace the device's only once both
    # exist: a failed issue leaves its earlier pair matching.
    (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/device.key")
    openssl req -new -key "$tmp/device.key" -out "$tmp/device.csr" -subj "/CN=device:$id"
    run openssl ca -batch -config "$tmp/ca.cnf" -in "$tmp/device.csr" -out "$tmp/device.pem" \
      -days "$days" -extfile "$tmp/device.ext" -notext
    mv -f "$tmp/device.key" "device-$id.key"
    mv -f "$tmp/device.pem" "device-$id.pem"
  )
  echo "device certificate: $dir/device-$id.pem (key $dir/device-$id.key)"
}

# revoked SERIAL: whether the CA's database lists SERIAL as revoked.
revoked() { awk -F'\t' -v s="$1" '$1 == "R" && toupper($4) == toupper(s) { found = 1 } END { exit !found }' index.txt; }

revoke() {
  local dir=$1 what=$2 id="" f serial n=0
  local -a files=()
  if [[ $what =~ $uuid_re ]]; then
    id=${what,,}
  else
    [ -f "$what" ] || fail "$what is neither a device UUID nor a certificate file"
    [[ $what = /* ]] || what=$PWD/$what
    files+=("$what")
  fi
  (
    use_ca "$dir"
    if [ -n "$id" ]; then
      # Every certificate issued for the device and still valid, and the
      # one in DIR (which a CA without a database issued, perhaps).
      while IFS= read -r serial; do
        files+=("issued/$serial.pem")
      done < <(awk -F'\t' -v cn="/CN=device:$id" '$1 == "V" && $6 == cn { print $4 }' index.txt)
      [ -f "device-$id.pem" ] && files+=("device-$id.pem")
      [ ${#files[@]} -gt 0 ] || fail "no certificate of device $id in $dir"
    fi
    for f in "${files[@]}"; do
      [ -f "$f" ] || fail "$f, listed in $dir/index.txt, is missing"
      openssl verify -no_check_time -CAfile ca.pem "$f" >/dev/null 2>&1 ||
        fail "$f was not issued by the CA in $dir"
      serial=$(openssl x509 -in "$f" -noout -serial)
      serial=${serial#serial=}
      if revoked "$serial"; then
        continue
      fi
      run openssl ca -batch -config "$tmp/ca.cnf" -revoke "$f"
      echo "revoked: $(openssl x509 -in "$f" -noout -subject | sed 's/^subject= *//'), serial $serial"
      n=$((n + 1))
    done
    [ "$n" -gt 0 ] || echo "already revoked: $what"
    gencrl "$crl_days"
  )
  echo "revocation list: $dir/crl.pem (valid $crl_days days); install it on the proxy and reload it"
}

crl() {
  local dir=$1 days=$2
  [[ $days =~ ^[1-9][0-9]*$ ]] || { echo "device-certs: $days is not a number of days" >&2; exit 2; }
  (use_ca "$dir"; gencrl "$days")
  echo "revocation list: $dir/crl.pem (valid $days days); install it on the proxy and reload it"
}

case "${1:-}" in
  ca) [ $# -eq 2 ] || usage; ca "$2" ;;
  issue) [ $# -ge 3 ] && [ $# -le 4 ] || usage; issue "$2" "$3" "${4:-825}" ;;
  revoke) [ $# -eq 3 ] || usage; revoke "$2" "$3" ;;
  crl) [ $# -ge 2 ] && [ $# -le 3 ] || usage; crl "$2" "${3:-$crl_days}" ;;
  *) usage ;;
esac
