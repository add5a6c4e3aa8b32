# Sourced by bench/interop.sh: every certificate of the interop matrix, made by the openssl
# command line (never by loadlab's own certificate code), into $CERTS. Server files are
# <name>.pem (the chain the server sends: leaf, then any intermediate) and <name>.key;
# clients trust ca.pem, except for the `selfsigned` cell (they trust selfsigned.pem itself).
#   ca            root CA (openssl req -x509, RSA-2048)
#   inter         intermediate CA, signed by the root
#   rsa2048 rsa4096 p256 p384   leaves signed by the root (localhost, 127.0.0.1, ::1)
#   chain         leaf signed by the intermediate; chain.pem = leaf + intermediate
#   selfsigned    `openssl req -x509` certificate (CA:TRUE), trusted as itself
#   expired notyet wrongname    leaves signed by the root: ended yesterday, start tomorrow,
#                               named wrong.example only
#   unknownca     leaf signed by a CA the client does not trust
#   client        client certificate (clientAuth) signed by the root, for mutual TLS

san="subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1"

# key NAME ALG: a private key (PKCS#8 PEM) of the named kind.
make_key() {
    case $2 in
        rsa2048) openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$CERTS/$1.key" ;;
        rsa4096) openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:4096 -out "$CERTS/$1.key" ;;
        p256) openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$CERTS/$1.key" ;;
        p384) openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out "$CERTS/$1.key" ;;
    esac 2>/dev/null
}

# sign NAME ISSUER EXT [openssl ca date flags...]: a certificate for NAME's key, signed by
# ISSUER with the extension lines EXT, through `openssl ca` (which alone takes any dates).
sign() {
    local name=$1 issuer=$2 ext=$3
    shift 3
    local db=$CERTS/db-$issuer
    mkdir -p "$db"
    [[ -f $db/index.txt ]] || { : > "$db/index.txt"; echo 1000 > "$db/serial"; }
    cat > "$CERTS/$name.cnf" <<CNF
[ca]
default_ca = this
[this]
database = $db/index.txt
serial = $db/serial
new_certs_dir = $db
default_md = sha256
policy = any
unique_subject = no
copy_extensions = none
[any]
commonName = supplied
[ext]
$(printf '%b' "$ext")
CNF
    openssl req -new -key "$CERTS/$name.key" -subj "/CN=${name}.loadlab.test" \
        -out "$CERTS/$name.csr" 2>/dev/null
    openssl ca -batch -notext -config "$CERTS/$name.cnf" -extensions ext \
        -cert "$CERTS/$issuer.pem" -keyfile "$CERTS/$issuer.key" \
        -in "$CERTS/$name.csr" -out "$CERTS/$name.crt" "$@" 2>"$CERTS/$name.err" \
        || { cat "$CERTS/$name.err" >&2; return 1; }
}

make_certs() {
    mkdir -p "$CERTS"
    local leaf="basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n$san"
    local cacert="basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign"
    local yesterday tomorrow
    # The root and the untrusted CA: `req -x509` with explicit CA extensions.
    for ca in ca otherca; do
        make_key "$ca" rsa2048
        openssl req -x509 -new -key "$CERTS/$ca.key" -days 30 -subj "/CN=loadlab interop $ca" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
            -out "$CERTS/$ca.pem" 2>/dev/null
    done
    make_key inter p256
    sign inter ca "$cacert" -days 30
    cp "$CERTS/inter.crt" "$CERTS/inter.pem"
    for alg in rsa2048 rsa4096 p256 p384; do
        make_key "$alg" "$alg"
        sign "$alg" ca "$leaf" -days 30
    done
    make_key chain p256
    sign chain inter "$leaf" -days 30
    make_key expired p256
    yesterday=$(date -u -d '-1 day' +%Y%m%d%H%M%SZ)
    sign expired ca "$leaf" -startdate "$(date -u -d '-30 days' +%Y%m%d%H%M%SZ)" -enddate "$yesterday"
    make_key notyet p256
    tomorrow=$(date -u -d '+1 day' +%Y%m%d%H%M%SZ)
    sign notyet ca "$leaf" -startdate "$tomorrow" -enddate "$(date -u -d '+30 days' +%Y%m%d%H%M%SZ)"
    make_key wrongname p256
    sign wrongname ca "${leaf%%subjectAltName*}subjectAltName=DNS:wrong.example" -days 30
    make_key unknownca p256
    sign unknownca otherca "$leaf" -days 30
    make_key client p256
    sign client ca "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth" -days 30
    # The most common self-signed certificate there is: openssl's defaults make it CA:TRUE.
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=localhost" \
        -addext "$san" -keyout "$CERTS/selfsigned.key" -out "$CERTS/selfsigned.crt" 2>/dev/null
    for name in rsa2048 rsa4096 p256 p384 expired notyet wrongname unknownca selfsigned client; do
        cp "$CERTS/$name.crt" "$CERTS/$name.pem"
    done
    cat "$CERTS/chain.crt" "$CERTS/inter.pem" > "$CERTS/chain.pem"
    # HAProxy takes the chain and its key in one file.
    for name in $TLS_VARIANTS; do
        cat "$CERTS/$name.pem" "$CERTS/$name.key" > "$CERTS/$name.both"
    done
    chmod 644 "$CERTS"/*.pem "$CERTS"/*.key
}
