// The extension's crypto.js against the draft's CPace vectors (Tests/AutoFillTests/Fixtures/
// cpace-x25519-sha512.json, draft-irtf-cfrg-cpace-21) and the protocol's own (autofill-vectors.json,
// computed by scripts/gen-autofill-vectors.py with PyPI `cryptography`, the same file the Swift tests
// read): run `node Tests/browser/crypto_vectors_test.mjs`; exit 1 on any mismatch.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const C = require("../../Extension/crypto.js");
const fixture = (name) => JSON.parse(readFileSync(new URL(`../AutoFillTests/Fixtures/${name}`, import.meta.url)));
const draft = fixture("cpace-x25519-sha512.json");
const vectors = fixture("autofill-vectors.json");
const hex = (bytes) => Buffer.from(bytes).toString("hex");
const bytes = (text) => new Uint8Array(Buffer.from(text, "hex"));
const text = (value) => new TextEncoder().encode(value);
let failures = 0;
function expect(name, actual, wanted) {
  if (actual !== wanted) {
    failures += 1;
    console.error(`FAIL ${name}: ${actual} != ${wanted}`);
  } else {
    console.log(`ok ${name}`);
  }
}

// --- the draft's vectors ---
const X = C.cpace;
for (const item of draft.prependLen) expect(`draft prepend_len(${item.input.length / 2} bytes)`, hex(X.prependLen(bytes(item.input))), item.output);
expect("draft lv_cat", hex(X.lvCat(...draft.lvCat.inputs.map(bytes))), draft.lvCat.output);
for (const item of draft.transcriptIR) {
  const transcript = C.concat(X.lvCat(bytes(item.Ya), bytes(item.ADa)), X.lvCat(bytes(item.Yb), bytes(item.ADb)));
  expect(`draft transcript_ir ${item.Ya}`, hex(transcript), item.output);
}
const gen = draft.generator;
expect("draft generator_string", hex(X.generatorString(bytes(gen.PRS), bytes(gen.CI), bytes(gen.sid))), gen.generatorString);
expect("draft generator g", hex(await X.generator(bytes(gen.PRS), bytes(gen.CI), bytes(gen.sid))), gen.g);
expect("draft Elligator 2 of the hash", hex(X.elligator2(bytes(gen.hash))), gen.g);
const ex = draft.exchange;
const g = await X.generator(bytes(ex.PRS), bytes(ex.CI), bytes(ex.sid));
const ya = await C.importPrivateKey(bytes(ex.ya));
const yb = await C.importPrivateKey(bytes(ex.yb));
const Ya = await X.scalarMultiply(ya, g);
const Yb = await X.scalarMultiply(yb, g);
expect("draft Ya", hex(Ya), ex.Ya);
expect("draft Yb", hex(Yb), ex.Yb);
const K = await X.scalarMultiply(ya, Yb);
expect("draft K (A)", hex(K), ex.K);
expect("draft K (B)", hex(await X.scalarMultiply(yb, Ya)), ex.K);
expect("draft ISK_IR", hex(await X.isk(bytes(ex.sid), K, Ya, bytes(ex.ADa), Yb, bytes(ex.ADb))), ex.ISK_IR);
const s = await C.importPrivateKey(bytes(draft.lowOrder.s));
for (const point of draft.lowOrder.points) {
  const q = await X.scalarMultiply(s, bytes(point.u));
  expect(`draft scalar_mult_vfy ${point.u.slice(0, 8)}…`, q === null ? "abort" : hex(q), point.abort ? "abort" : point.q);
}

// --- the map on the Python vectors' edge cases and random inputs ---
for (const item of vectors.elligator2) expect(`elligator2 ${item.input.slice(0, 8)}…`, hex(X.elligator2(bytes(item.input))), item.generator);

// --- Keyhaven's pairing: the extension's side, and the agent's share from its scalar ---
const pairing = vectors.pairing;
const context = {
  code: pairing.code,
  request: pairing.pairingRequest,
  browser: pairing.browser,
  caller: pairing.caller,
  clientNonce: bytes(pairing.clientNonce),
  agentNonce: bytes(pairing.agentNonce),
};
const inputs = C.pairingInputs(context);
expect("pairing PRS", hex(inputs.prs), pairing.prs);
expect("pairing CI", hex(inputs.ci), pairing.ci);
expect("pairing sid", hex(inputs.sid), pairing.sid);
const pairingGenerator = await X.generator(inputs.prs, inputs.ci, inputs.sid);
expect("pairing generator", hex(pairingGenerator), pairing.generator);
expect("pairing agentShare", hex(await X.scalarMultiply(await C.importPrivateKey(bytes(pairing.agentScalar)), pairingGenerator)), pairing.agentShare);
const response = await C.pairingResponse(context, bytes(pairing.agentShare), await C.importPrivateKey(bytes(pairing.clientScalar)));
expect("pairing clientShare", hex(response.clientShare), pairing.clientShare);
expect("pairing clientConfirm", hex(response.clientConfirm), pairing.clientConfirm);
expect("pairing agentConfirm", hex(response.agentConfirm), pairing.agentConfirm);
expect("pairing pairingKey", hex(response.pairingKey), pairing.pairingKey);
const wrong = await C.pairingResponse({ ...context, code: "492818" }, bytes(pairing.agentShare), await C.importPrivateKey(bytes(pairing.clientScalar)));
expect("another code gives another tag", wrong.clientConfirm.length === 64 && !C.equal(wrong.clientConfirm, response.clientConfirm), true);
expect("another code's agent tag does not check", C.equal(wrong.agentConfirm, bytes(pairing.agentConfirm)), false);
let refused = false;
try {
  await C.pairingResponse(context, bytes(draft.lowOrder.points[1].u));
} catch {
  refused = true;
}
expect("a low-order agent share is refused", refused, true);
const fresh = await C.pairingResponse(context, bytes(pairing.agentShare));
expect("a fresh scalar gives a fresh share", fresh.clientShare.length === 32 && hex(fresh.clientShare) !== pairing.clientShare, true);

// --- the session ---
const session = vectors.session;
const sessionKey = await C.sessionKeyBytes(bytes(session.pairingKey), bytes(session.clientNonce), bytes(session.agentNonce));
expect("sessionKey", hex(sessionKey), session.sessionKey);
const extension = await C.channel(sessionKey, "extension");
const agent = await C.channel(sessionKey, "agent");
for (const frame of session.frames) {
  const sender = frame.direction === 1 ? extension : agent;
  const receiver = frame.direction === 1 ? agent : extension;
  const { n, sealed } = await sender.seal(text(frame.plaintext));
  expect(`frame ${frame.direction}/${frame.counter} counter`, n, frame.counter);
  expect(`frame ${frame.direction}/${frame.counter} sealed`, hex(sealed), frame.sealed);
  const opened = new TextDecoder().decode(await receiver.open(n, bytes(frame.sealed)));
  expect(`frame ${frame.direction}/${frame.counter} opened`, opened, frame.plaintext);
}
expect("base64url round trip", hex(C.fromB64url(C.b64url(bytes("00ff10fbef")))), "00ff10fbef");
process.exit(failures === 0 ? 0 : 1);
