#!/usr/bin/env python3
"""Writes Tests/AutoFillTests/Fixtures/autofill-vectors.json: the AutoFill protocol's pairing (CPace,
docs/autofill-protocol.md §2.2), session key and sealed frames (§2.3) computed from fixed inputs
with PyPI `cryptography` and Python's integers, an implementation independent of Keyhaven's Swift
and JavaScript. Before writing anything it checks its CPace against the draft's own vectors
(Tests/AutoFillTests/Fixtures/cpace-x25519-sha512.json, from scripts/extract-cpace-vectors.py).
The Swift tests (AutoFillVectorTests) and the extension's crypto.js (Tests/browser/
crypto_vectors_test.mjs, run by node) must both reproduce every value.

Fields (all bytes in lowercase hex):
- pairing: the inputs code (text), pairingRequest, browser, caller (text), clientNonce, agentNonce,
  agentScalar, clientScalar; and what they give: prs, ci, sid, generator, agentShare, clientShare,
  isk, agentConfirm, clientConfirm, pairingKey.
- session: pairingKey (the pairing's), clientNonce, agentNonce, sessionKey, frames: [{direction:
  1 (extension → agent) | 2, counter, plaintext (text), sealed (ciphertext ‖ tag)}].
- elligator2: [{input (32 bytes, bit 255 ignored), generator}] — the map on edge cases (0, 1, p − 1,
  p, values ≥ p, bit 255 set) and on random inputs, for the field arithmetic of both implementations.

    scripts/gen-autofill-vectors.py          # rewrite the file (the values never change)
"""
import hashlib
import hmac
import json
import pathlib

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "Tests/AutoFillTests/Fixtures/autofill-vectors.json"
DRAFT = ROOT / "Tests/AutoFillTests/Fixtures/cpace-x25519-sha512.json"

# --- CPACE-X25519-SHA512 (draft-irtf-cfrg-cpace-21) ---

P = 2**255 - 19
A = 486662
DSI = b"CPace255"
S_IN_BYTES = 128  # SHA-512's input block


def prepend_len(data: bytes) -> bytes:
    length, encoded = len(data), b""
    while True:
        encoded += bytes([length & 0x7F | (0x80 if length >= 128 else 0)])
        length >>= 7
        if length == 0:
            return encoded + data


def lv_cat(*parts: bytes) -> bytes:
    return b"".join(prepend_len(part) for part in parts)


def generator_string(prs: bytes, ci: bytes, sid: bytes) -> bytes:
    zpad = max(0, S_IN_BYTES - 1 - len(prepend_len(prs)) - len(prepend_len(DSI)))
    return lv_cat(DSI, prs, bytes(zpad), ci, sid)


def elligator2(hashed: bytes) -> bytes:
    """map_to_curve_elligator2 (RFC 9380, Z = 2) of decodeUCoordinate(hashed, 255); the u of the point."""
    r = int.from_bytes(hashed, "little") & ((1 << 255) - 1)
    v = -A * pow(1 + 2 * r * r, P - 2, P) % P
    epsilon = pow((v**3 + A * v * v + v) % P, (P - 1) // 2, P)
    x = (epsilon * v - (1 - epsilon) * (A // 2)) % P
    return x.to_bytes(32, "little")


def calculate_generator(prs: bytes, ci: bytes, sid: bytes) -> bytes:
    return elligator2(hashlib.sha512(generator_string(prs, ci, sid)).digest()[:32])


def x25519(scalar: bytes, u: bytes) -> bytes:
    """X25519(scalar, u); raises when the result is the identity (all zeros): CPace's abort."""
    return X25519PrivateKey.from_private_bytes(scalar).exchange(X25519PublicKey.from_public_bytes(u))


def isk(sid: bytes, k: bytes, ya: bytes, ada: bytes, yb: bytes, adb: bytes) -> bytes:
    return hashlib.sha512(lv_cat(DSI + b"_ISK", sid, k) + lv_cat(ya, ada) + lv_cat(yb, adb)).digest()


def check_against_the_draft() -> None:
    draft = json.loads(DRAFT.read_text(encoding="utf-8"))
    h = bytes.fromhex
    for case in draft["prependLen"]:
        assert prepend_len(h(case["input"])).hex() == case["output"]
    assert lv_cat(*map(h, draft["lvCat"]["inputs"])).hex() == draft["lvCat"]["output"]
    for case in draft["transcriptIR"]:
        assert (lv_cat(h(case["Ya"]), h(case["ADa"])) + lv_cat(h(case["Yb"]), h(case["ADb"]))).hex() == case["output"]
    g = draft["generator"]
    assert generator_string(h(g["PRS"]), h(g["CI"]), h(g["sid"])).hex() == g["generatorString"]
    assert hashlib.sha512(h(g["generatorString"])).digest()[:32].hex() == g["hash"]
    assert calculate_generator(h(g["PRS"]), h(g["CI"]), h(g["sid"])).hex() == g["g"]
    e = draft["exchange"]
    generator = calculate_generator(h(e["PRS"]), h(e["CI"]), h(e["sid"]))
    assert generator.hex() == e["g"]
    ya, yb = x25519(h(e["ya"]), generator), x25519(h(e["yb"]), generator)
    assert ya.hex() == e["Ya"] and yb.hex() == e["Yb"]
    k = x25519(h(e["ya"]), yb)
    assert k == x25519(h(e["yb"]), ya) and k.hex() == e["K"]
    assert isk(h(e["sid"]), k, ya, h(e["ADa"]), yb, h(e["ADb"])).hex() == e["ISK_IR"]
    low = draft["lowOrder"]
    for point in low["points"]:
        try:
            q = x25519(h(low["s"]), h(point["u"]))
        except ValueError:
            q = bytes(32)
        assert q.hex() == point["q"] and (q == bytes(32)) == point["abort"]


check_against_the_draft()

# --- Keyhaven's pairing (docs/autofill-protocol.md §2.2) ---


def hkdf(ikm: bytes, salt: bytes, info: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info.encode()).derive(ikm)


code = "492817"
request = "q7Jd0mNTm4h1JYxC"
browser = "chromium"
caller = "chrome-extension://mmoeaodkpmjigkebafdpnnnanbhpfmpd/"
pair_client_nonce = hashlib.sha256(b"keyhaven test vector: pairing client nonce").digest()[:16]
pair_agent_nonce = hashlib.sha256(b"keyhaven test vector: pairing agent nonce").digest()[:16]
agent_scalar = hashlib.sha256(b"keyhaven test vector: agent").digest()
client_scalar = hashlib.sha256(b"keyhaven test vector: client").digest()

prs = b"keyhaven-pairing-code:" + code.encode()
ci = lv_cat(b"keyhaven-autofill-pairing-v2", b"agent", b"extension", browser.encode(), caller.encode(), request.encode())
sid = pair_client_nonce + pair_agent_nonce
generator = calculate_generator(prs, ci, sid)
agent_share = x25519(agent_scalar, generator)  # A, the initiator: its share goes out first, in pair.begin's reply
client_share = x25519(client_scalar, generator)  # B, the responder
k = x25519(agent_scalar, client_share)
assert k == x25519(client_scalar, agent_share)
pairing_isk = isk(sid, k, agent_share, b"", client_share, b"")
mac_key = hashlib.sha512(b"CPaceMac" + sid + pairing_isk).digest()
agent_confirm = hmac.new(mac_key, lv_cat(agent_share, b""), hashlib.sha512).digest()
client_confirm = hmac.new(mac_key, lv_cat(client_share, b""), hashlib.sha512).digest()
pairing_key = hkdf(pairing_isk, sid, "keyhaven-autofill-pairing-v2")

# --- the session (§2.3) ---

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

# --- the map on edge cases and random inputs ---

edge_inputs = [0, 1, 2, P - 1, P, P + 1, P + 18, 2**255 - 1, 2**256 - 1, 2**255, (P - 1) // 2, A, P - A]
map_inputs = [n.to_bytes(32, "little") for n in edge_inputs]
map_inputs += [hashlib.sha512(b"keyhaven elligator2 %d" % i).digest()[:32] for i in range(24)]

vectors = {
    "pairing": {
        "code": code,
        "pairingRequest": request,
        "browser": browser,
        "caller": caller,
        "clientNonce": pair_client_nonce.hex(),
        "agentNonce": pair_agent_nonce.hex(),
        "agentScalar": agent_scalar.hex(),
        "clientScalar": client_scalar.hex(),
        "prs": prs.hex(),
        "ci": ci.hex(),
        "sid": sid.hex(),
        "generator": generator.hex(),
        "agentShare": agent_share.hex(),
        "clientShare": client_share.hex(),
        "isk": pairing_isk.hex(),
        "agentConfirm": agent_confirm.hex(),
        "clientConfirm": client_confirm.hex(),
        "pairingKey": pairing_key.hex(),
    },
    "session": {
        "pairingKey": pairing_key.hex(),
        "clientNonce": client_nonce.hex(),
        "agentNonce": agent_nonce.hex(),
        "sessionKey": session_key.hex(),
        "frames": frames,
    },
    "elligator2": [{"input": data.hex(), "generator": elligator2(data).hex()} for data in map_inputs],
}
OUT.write_text(json.dumps(vectors, indent=2) + "\n", encoding="utf-8")
print(f"wrote {OUT.relative_to(ROOT)}")
