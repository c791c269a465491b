// The extension's crypto.js against the protocol's vectors (computed by scripts/gen-autofill-vectors.py
// with PyPI `cryptography`): run `node Tests/browser/crypto_vectors_test.mjs`; exit 1 on any mismatch.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const C = require("../../Extension/crypto.js");
const vectors = JSON.parse(readFileSync(new URL("../AutoFillTests/Fixtures/autofill-vectors.json", import.meta.url)));
const hex = (bytes) => Buffer.from(bytes).toString("hex");
const bytes = (text) => new Uint8Array(Buffer.from(text, "hex"));
let failures = 0;
function expect(name, actual, wanted) {
  if (actual !== wanted) {
    failures += 1;
    console.error(`FAIL ${name}: ${actual} != ${wanted}`);
  } else {
    console.log(`ok ${name}`);
  }
}

const client = await C.importPrivateKey(bytes(vectors.clientPrivateKey));
const pairingKey = await C.pairingKey(client, bytes(vectors.clientPublicKey), bytes(vectors.agentPublicKey));
expect("pairingKey", hex(pairingKey), vectors.pairingKey);
expect("proof", hex(await C.proof(vectors.code, pairingKey)), vectors.proof);
const session = await C.sessionKeyBytes(pairingKey, bytes(vectors.clientNonce), bytes(vectors.agentNonce));
expect("sessionKey", hex(session), vectors.sessionKey);
const extension = await C.channel(session, "extension");
const agent = await C.channel(session, "agent");
for (const frame of vectors.frames) {
  const sender = frame.direction === 1 ? extension : agent;
  const receiver = frame.direction === 1 ? agent : extension;
  const { n, sealed } = await sender.seal(new TextEncoder().encode(frame.plaintext));
  expect(`frame ${frame.direction}/${frame.counter} counter`, n, frame.counter);
  expect(`frame ${frame.direction}/${frame.counter} sealed`, hex(sealed), frame.sealed);
  const opened = new TextDecoder().decode(await receiver.open(n, bytes(frame.sealed)));
  expect(`frame ${frame.direction}/${frame.counter} opened`, opened, frame.plaintext);
}
expect("base64url round trip", hex(C.fromB64url(C.b64url(bytes("00ff10fbef")))), "00ff10fbef");
process.exit(failures === 0 ? 0 : 1);
