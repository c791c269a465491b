#!/usr/bin/env python3
"""Writes Tests/AutoFillTests/Fixtures/autofill-vectors.json: the AutoFill protocol's handshake and
sealed frames (docs/autofill-protocol.md §2.2–2.3) computed from fixed inputs with PyPI
`cryptography`, an implementation independent of Keyhaven's Swift and JavaScript. The Swift tests
(AutoFillVectorTests) and the extension's crypto.js (Tests/browser/crypto_vectors_test.mjs, run by
node) must both reproduce every value.

Fields (all bytes in lowercase hex): clientPrivateKey, agentPrivateKey (X25519, raw 32 bytes),
clientPublicKey, agentPublicKey, sharedSecret, pairingKey, code (text), proof, clientNonce,
agentNonce, sessionKey, frames: [{direction: 1 (extension → agent) | 2, counter, plaintext (text),
sealed (ciphertext ‖ tag)}].

    scripts/gen-autofill-vectors.py          # rewrite the file (the values never change)
"""
import hashlib
import hmac
import json
import pathlib

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "Tests/AutoFillTests/Fixtures/autofill-vectors.json"


def hkdf(ikm: bytes, salt: bytes, info: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info.encode()).derive(ikm)


def raw_public(private: X25519PrivateKey) -> bytes:
    return private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


client_raw = hashlib.sha256(b"keyhaven test vector: client").digest()
agent_raw = hashlib.sha256(b"keyhaven test vector: agent").digest()
client = X25519PrivateKey.from_private_bytes(client_raw)
agent = X25519PrivateKey.from_private_bytes(agent_raw)
client_public, agent_public = raw_public(client), raw_public(agent)
shared = client.exchange(agent.public_key())
assert shared == agent.exchange(client.public_key())
pairing_key = hkdf(shared, client_public + agent_public, "keyhaven-autofill-pairing-v1")
code = "492817"
proof = hmac.new(pairing_key, ("keyhaven-pair|" + code).encode(), hashlib.sha256).digest()
client_nonce = bytes(range(16))
agent_nonce = bytes(range(16, 32))
session_key = hkdf(pairing_key, client_nonce + agent_nonce, "keyhaven-autofill-session-v1")
frames = []
for direction, counter, plaintext in [
    (1, 1, '{"id":1,"type":"state","v":1}'),
    (1, 2, '{"id":2,"type":"identities.query","url":"https://example.com/login","v":1}'),
    (2, 1, '{"id":1,"ok":{"revision":3,"state":"unlocked","supportsIncrementalUpdates":true},"v":1}'),
    (2, 2, '{"event":"identities.changed","replaced":true,"revision":4,"v":1}'),
]:
    nonce = direction.to_bytes(4, "big") + counter.to_bytes(8, "big")
    sealed = AESGCM(session_key).encrypt(nonce, plaintext.encode(), None)
    frames.append({"direction": direction, "counter": counter, "plaintext": plaintext, "sealed": sealed.hex()})

vectors = {
    "clientPrivateKey": client_raw.hex(),
    "agentPrivateKey": agent_raw.hex(),
    "clientPublicKey": client_public.hex(),
    "agentPublicKey": agent_public.hex(),
    "sharedSecret": shared.hex(),
    "pairingKey": pairing_key.hex(),
    "code": code,
    "proof": proof.hex(),
    "clientNonce": client_nonce.hex(),
    "agentNonce": agent_nonce.hex(),
    "sessionKey": session_key.hex(),
    "frames": frames,
}
OUT.write_text(json.dumps(vectors, indent=2) + "\n", encoding="utf-8")
print(f"wrote {OUT.relative_to(ROOT)}")
