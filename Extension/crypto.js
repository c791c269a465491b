// Keyhaven AutoFill's cryptography (docs/autofill-protocol.md §2.2–2.3) with WebCrypto only:
// X25519 → HKDF-SHA256 pairing key, the pairing code's HMAC proof, a session key per connection and
// AES-256-GCM frames with a counter nonce per direction. Loaded by the background script
// (importScripts or a Firefox background script) and by node for the test vectors.
"use strict";

const KeyhavenCrypto = (() => {
  const subtle = globalThis.crypto.subtle;
  const text = new TextEncoder();

  function b64url(bytes) {
    let binary = "";
    for (const byte of new Uint8Array(bytes)) binary += String.fromCharCode(byte);
    return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function fromB64url(value) {
    const padded = value.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((value.length + 3) % 4);
    const binary = atob(padded);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  function concat(...parts) {
    const total = parts.reduce((sum, part) => sum + part.length, 0);
    const out = new Uint8Array(total);
    let offset = 0;
    for (const part of parts) {
      out.set(part, offset);
      offset += part.length;
    }
    return out;
  }

  async function hkdf(ikm, salt, info) {
    const key = await subtle.importKey("raw", ikm, "HKDF", false, ["deriveBits"]);
    const bits = await subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt, info: text.encode(info) }, key, 256);
    return new Uint8Array(bits);
  }

  /** A fresh X25519 key pair: { privateKey, publicKey (32 raw bytes) }. */
  async function generateKeyPair() {
    const pair = await subtle.generateKey({ name: "X25519" }, true, ["deriveBits"]);
    const publicKey = new Uint8Array(await subtle.exportKey("raw", pair.publicKey));
    return { privateKey: pair.privateKey, publicKey };
  }

  /** Imports a raw 32-byte X25519 private key (PKCS#8 wrapped), for the test vectors. */
  async function importPrivateKey(raw) {
    const prefix = new Uint8Array([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20]);
    return subtle.importKey("pkcs8", concat(prefix, raw), { name: "X25519" }, true, ["deriveBits"]);
  }

  /** pairingKey = HKDF-SHA256(X25519(client, agent), salt: clientPublic ‖ agentPublic, "keyhaven-autofill-pairing-v1"). */
  async function pairingKey(clientPrivateKey, clientPublicKey, agentPublicKey) {
    const agent = await subtle.importKey("raw", agentPublicKey, { name: "X25519" }, true, []);
    const shared = new Uint8Array(await subtle.deriveBits({ name: "X25519", public: agent }, clientPrivateKey, 256));
    return hkdf(shared, concat(clientPublicKey, agentPublicKey), "keyhaven-autofill-pairing-v1");
  }

  /** HMAC-SHA256(pairingKey, "keyhaven-pair|" + code). */
  async function proof(code, pairingKeyBytes) {
    const key = await subtle.importKey("raw", pairingKeyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    return new Uint8Array(await subtle.sign("HMAC", key, text.encode("keyhaven-pair|" + code)));
  }

  /** HKDF-SHA256(pairingKey, salt: clientNonce ‖ agentNonce, "keyhaven-autofill-session-v1"), raw bytes. */
  async function sessionKeyBytes(pairingKeyBytes, clientNonce, agentNonce) {
    return hkdf(pairingKeyBytes, concat(clientNonce, agentNonce), "keyhaven-autofill-session-v1");
  }

  function nonce(direction, counter) {
    const bytes = new Uint8Array(12);
    const view = new DataView(bytes.buffer);
    view.setUint32(0, direction);
    view.setBigUint64(4, BigInt(counter));
    return bytes;
  }

  /** One side of a session: seal(plaintext) → {n, sealed}; open(n, sealed) → plaintext, in order only. */
  async function channel(sessionKey, side) {
    const key = await subtle.importKey("raw", sessionKey, "AES-GCM", false, ["encrypt", "decrypt"]);
    const sendDirection = side === "extension" ? 1 : 2;
    const receiveDirection = side === "extension" ? 2 : 1;
    let sent = 0;
    let received = 0;
    return {
      async seal(plaintext) {
        sent += 1;
        const n = sent;
        const sealed = new Uint8Array(await subtle.encrypt({ name: "AES-GCM", iv: nonce(sendDirection, n) }, key, plaintext));
        return { n, sealed };
      },
      async open(n, sealed) {
        if (n !== received + 1) throw new Error("a sealed message arrived out of order");
        const plaintext = new Uint8Array(await subtle.decrypt({ name: "AES-GCM", iv: nonce(receiveDirection, n) }, key, sealed));
        received = n;
        return plaintext;
      },
    };
  }

  return { b64url, fromB64url, concat, generateKeyPair, importPrivateKey, pairingKey, proof, sessionKeyBytes, channel };
})();

globalThis.KeyhavenCrypto = KeyhavenCrypto;
if (typeof module !== "undefined") module.exports = KeyhavenCrypto;
