#!/usr/bin/env bash
# Fuzzes `keyhaven sync serve` against its contract (docs/openapi/sync.yaml) with Schemathesis: starts
# the server built in .build/debug on a fresh database, enrols a device (an Ed25519 key made here with
# python's cryptography package), signs a challenge for a bearer token (every message naming the
# server's origin, http://127.0.0.1:PORT, as VaultSync's DeviceSignatures does), and runs scripts/schemathesis.sh
# with that token, so the authenticated operations (push, changes, devices) are fuzzed past the 401.
# Revocation is not fuzzed (it would revoke the fuzzing device). Long polls are capped at 1 s (--max-wait 1) so that a generated `wait=60` does not stall the run
# while the long-poll path is still exercised. Afterwards the token must still work (GET /v1/devices
# answers 200); on failure the server's log is printed.
#   scripts/schemathesis-sync.sh [EXTRA SCHEMATHESIS ARGS...]
# Needs `swift build` first; scripts/test.sh runs it (about 20 s).
set -euo pipefail
cd "$(dirname "$0")/.."

data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
.build/debug/keyhaven sync serve --database "$data/sync.sqlite" --port "$port" --max-wait 1 >"$data/log" 2>&1 &
server=$!
finish() {
    status=$?
    kill "$server" 2>/dev/null || true
    if [[ $status -ne 0 && -f "$data/log" ]]; then
        echo "schemathesis-sync: failed ($status); the server's log:" >&2
        cat "$data/log" >&2
    fi
    rm -rf "$data"
    exit "$status"
}
trap finish EXIT
for _ in $(seq 1 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
    sleep 0.1
done

token=$(
    python3 - "http://127.0.0.1:$port" <<'PY'
import base64, hashlib, json, sys, urllib.request
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

base = sys.argv[1]
# The server's origin (scheme://host[:port], no default port, lower case): what every signed message
# names (VaultSync's DeviceSignatures); the server listens on base and takes it as its public URL.
origin = base.lower().rstrip("/")
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
unb64 = lambda s: base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))

def message(label, *parts):
    out = ("keyhaven-sync/v2/" + label).encode()
    for part in (origin.encode(),) + parts:
        out += len(part).to_bytes(4, "big") + part
    return out

def post(path, body):
    request = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request))

key = Ed25519PrivateKey.generate()
public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
device = post("/v1/accounts", {"publicKey": b64(public), "name": "schemathesis", "origin": origin,
                               "proof": b64(key.sign(message("create-account", public)))})
assert device["id"] == hashlib.sha256(public).digest()[:16].hex()
challenge = post("/v1/auth/challenge", {"device": device["id"]})["challenge"]
signature = key.sign(message("token", device["id"].encode(), unb64(challenge)))
print(post("/v1/auth/token", {"device": device["id"], "challenge": challenge, "origin": origin,
                               "signature": b64(signature)})["token"])
PY
)

# DELETE /v1/devices/{id} is left out: the stateful phase links it to the ids GET /v1/devices lists,
# so it would revoke the fuzzing device itself (SyncAuthTests covers revocation).
SCHEMATHESIS_SCHEMA=docs/openapi/sync.yaml scripts/schemathesis.sh "http://127.0.0.1:$port" \
    -H "Authorization: Bearer $token" --exclude-operation-id revokeDevice "$@"

# The token still works after the run (the fuzzing neither broke the server nor revoked the device).
status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" "http://127.0.0.1:$port/v1/devices")
if [[ "$status" != 200 ]]; then
    echo "schemathesis-sync: GET /v1/devices with the token answered $status, not 200" >&2
    exit 1
fi
echo "schemathesis-sync: the token still works (GET /v1/devices: 200)"
