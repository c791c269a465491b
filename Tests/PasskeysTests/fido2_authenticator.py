#!/usr/bin/env python3
"""An independent WebAuthn authenticator built on PyPI `fido2` (Yubico's encoders) and
`cryptography`, to play against Keyhaven's PasskeyRelyingParty kit. Reads one JSON job on standard
input:

    {"origin", "rpId", "algorithm": -7 | -8, "fmt": "none" | "packed", "userId",
     "challenge", "assertions": [{"challenge", "counter", "uv"}]}

(binary values in base64url) and prints {"registration": PublicKeyCredential JSON,
"assertions": [PublicKeyCredential JSON, ...]}.
"""
import base64
import hashlib
import json
import os
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from fido2.cose import ES256, EdDSA
from fido2.webauthn import AttestationObject, AttestedCredentialData, AuthenticatorData, CollectedClientData


def b64(data):
    return base64.urlsafe_b64encode(bytes(data)).rstrip(b"=").decode()


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


job = json.load(sys.stdin)
F = AuthenticatorData.FLAG
rp_hash = hashlib.sha256(job["rpId"].encode()).digest()
if job["algorithm"] == -8:
    key = ed25519.Ed25519PrivateKey.generate()
    cose = EdDSA.from_cryptography_key(key.public_key())
    sign = key.sign
else:
    key = ec.generate_private_key(ec.SECP256R1())
    cose = ES256.from_cryptography_key(key.public_key())
    sign = lambda data: key.sign(data, ec.ECDSA(hashes.SHA256()))  # noqa: E731
credential_id = os.urandom(16)
client_data = CollectedClientData.create("webauthn.create", unb64(job["challenge"]), job["origin"])
auth_data = AuthenticatorData.create(rp_hash, F.UP | F.UV | F.AT | F.BE, 0,
                                     AttestedCredentialData.create(b"\0" * 16, credential_id, cose))
statement = {}
if job["fmt"] == "packed":
    statement = {"alg": job["algorithm"], "sig": sign(bytes(auth_data) + client_data.hash)}
attestation = AttestationObject.create(job["fmt"], auth_data, statement)
out = {"registration": {
    "id": b64(credential_id), "rawId": b64(credential_id), "type": "public-key",
    "response": {"clientDataJSON": b64(client_data), "attestationObject": b64(attestation)},
    "clientExtensionResults": {}}, "assertions": []}
for step in job["assertions"]:
    flags = F.UP | F.BE | (F.UV if step.get("uv", True) else 0)
    data = AuthenticatorData.create(rp_hash, flags, step["counter"])
    client = CollectedClientData.create("webauthn.get", unb64(step["challenge"]), job["origin"])
    out["assertions"].append({
        "id": b64(credential_id), "rawId": b64(credential_id), "type": "public-key",
        "response": {"clientDataJSON": b64(client), "authenticatorData": b64(data),
                     "signature": b64(sign(bytes(data) + client.hash)), "userHandle": job["userId"]},
        "clientExtensionResults": {}})
print(json.dumps(out))
