// Keyhaven AutoFill's cryptography (docs/autofill-protocol.md §2.2–2.3): pairing with CPace
// (draft-irtf-cfrg-cpace-21, CPACE-X25519-SHA512: X25519 from WebCrypto, the map to the curve with
// BigInt) from the 6-digit code, a session key per connection and AES-256-GCM frames with a counter
// nonce per direction. Loaded by the background script (importScripts or a Firefox background
// script) and by node for the test vectors (Tests/browser/crypto_vectors_test.mjs).
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

  /** Whether two byte strings are equal, looking at every byte (for tags). */
  function equal(a, b) {
    if (a.length !== b.length) return false;
    let difference = 0;
    for (let i = 0; i < a.length; i++) difference |= a[i] ^ b[i];
    return difference === 0;
  }

  // --- CPace (draft-irtf-cfrg-cpace-21), cipher suite CPACE-X25519-SHA512, with the draft's names ---

  const P = (1n << 255n) - 19n;
  const A = 486662n;

  function mod(value) {
    const reduced = value % P;
    return reduced < 0n ? reduced + P : reduced;
  }

  function power(base, exponent) {
    let result = 1n;
    base = mod(base);
    for (; exponent > 0n; exponent >>= 1n) {
      if (exponent & 1n) result = (result * base) % P;
      base = (base * base) % P;
    }
    return result;
  }

  /** prepend_len: the length as LEB128, then the bytes. */
  function prependLen(data) {
    const length = [];
    let n = data.length;
    do {
      length.push((n & 0x7f) | (n >= 128 ? 0x80 : 0));
      n >>= 7;
    } while (n > 0);
    return concat(new Uint8Array(length), data);
  }

  /** lv_cat: each part with its length prepended. */
  function lvCat(...parts) {
    return concat(...parts.map(prependLen));
  }

  const DSI = text.encode("CPace255");

  /** generator_string(G.DSI, PRS, CI, sid, 128): the password zero-padded to fill SHA-512's first block. */
  function generatorString(prs, ci, sid) {
    const padding = Math.max(0, 128 - 1 - prependLen(prs).length - prependLen(DSI).length);
    return lvCat(DSI, prs, new Uint8Array(padding), ci, sid);
  }

  /** map_to_curve_elligator2 (RFC 9380, Z = 2) of decodeUCoordinate(bytes, 255), as a u-coordinate:
   *  v = −A/(1 + 2r²); ε = (v³ + Av² + v)^((p−1)/2); u = εv − (1 − ε)·A/2. */
  function elligator2(bytes) {
    let r = 0n;
    for (let i = 31; i >= 0; i--) r = (r << 8n) | BigInt(bytes[i]);
    r &= (1n << 255n) - 1n;
    const v = mod(-A * power(1n + 2n * r * r, P - 2n));
    const epsilon = power(v * v * v + A * v * v + v, (P - 1n) / 2n);
    let u = mod(epsilon * v - (1n - epsilon) * (A / 2n));
    const out = new Uint8Array(32);
    for (let i = 0; i < 32; i++, u >>= 8n) out[i] = Number(u & 0xffn);
    return out;
  }

  /** G.calculate_generator: Elligator 2 of the first 32 bytes of SHA-512(generator_string). */
  async function generator(prs, ci, sid) {
    const hash = new Uint8Array(await subtle.digest("SHA-512", generatorString(prs, ci, sid)));
    return elligator2(hash.subarray(0, 32));
  }

  /** G.scalar_mult_vfy: X25519(privateKey, u), or null for the neutral element (all zeros), which
   *  low-order points give (WebCrypto refuses it too): CPace aborts then. */
  async function scalarMultiply(privateKey, u) {
    try {
      const point = await subtle.importKey("raw", u, { name: "X25519" }, true, []);
      const result = new Uint8Array(await subtle.deriveBits({ name: "X25519", public: point }, privateKey, 256));
      return result.some((byte) => byte !== 0) ? result : null;
    } catch {
      return null;
    }
  }

  /** ISK = SHA-512(lv_cat(G.DSI ‖ "_ISK", sid, K) ‖ transcript_ir(Ya, ADa, Yb, ADb)). */
  async function isk(sid, k, ya, ada, yb, adb) {
    const input = concat(lvCat(text.encode("CPace255_ISK"), sid, k), lvCat(ya, ada), lvCat(yb, adb));
    return new Uint8Array(await subtle.digest("SHA-512", input));
  }

  const cpace = { prependLen, lvCat, generatorString, elligator2, generator, scalarMultiply, isk };

  // --- Keyhaven's pairing over CPace (docs/autofill-protocol.md §2.2) ---

  /** PRS, CI and sid of one pairing try; the agent is CPace's initiator, the extension its responder. */
  function pairingInputs({ code, request, browser, caller, clientNonce, agentNonce }) {
    return {
      prs: text.encode("keyhaven-pairing-code:" + code),
      ci: lvCat(...["keyhaven-autofill-pairing-v2", "agent", "extension", browser, caller, request].map((part) => text.encode(part))),
      sid: concat(clientNonce, agentNonce),
    };
  }

  /** A fresh CPace scalar (an X25519 private key WebCrypto holds). */
  async function pairingScalar() {
    return (await subtle.generateKey({ name: "X25519" }, false, ["deriveBits"])).privateKey;
  }

  /** The extension's side of one try, once it has the agent's share and the typed code (a fresh
   *  scalar unless `privateKey` is given, for the vectors):
   *  {clientShare, clientConfirm, agentConfirm (to check the agent's against), pairingKey}.
   *  Throws when the agent's share is a low-order point. */
  async function pairingResponse(context, agentShare, privateKey) {
    privateKey ??= await pairingScalar();
    const { prs, ci, sid } = pairingInputs(context);
    const clientShare = await scalarMultiply(privateKey, await generator(prs, ci, sid));
    const k = await scalarMultiply(privateKey, agentShare);
    if (!clientShare || !k) throw new Error("the agent's pairing share is not a valid X25519 point");
    const none = new Uint8Array(0);
    const intermediate = await isk(sid, k, agentShare, none, clientShare, none);
    const macKey = await subtle.digest("SHA-512", concat(text.encode("CPaceMac"), sid, intermediate));
    const mac = await subtle.importKey("raw", macKey, { name: "HMAC", hash: "SHA-512" }, false, ["sign"]);
    const tag = async (share) => new Uint8Array(await subtle.sign("HMAC", mac, lvCat(share, none)));
    return {
      clientShare,
      clientConfirm: await tag(clientShare),
      agentConfirm: await tag(agentShare),
      pairingKey: await hkdf(intermediate, sid, "keyhaven-autofill-pairing-v2"),
    };
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

  return {
    b64url,
    fromB64url,
    concat,
    equal,
    generateKeyPair,
    importPrivateKey,
    cpace,
    pairingInputs,
    pairingScalar,
    pairingResponse,
    sessionKeyBytes,
    channel,
  };
})();

globalThis.KeyhavenCrypto = KeyhavenCrypto;
if (typeof module !== "undefined") module.exports = KeyhavenCrypto;
