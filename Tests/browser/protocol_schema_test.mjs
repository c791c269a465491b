// The messages the extension really sends to Keyhaven's agent, checked against the JSON Schema the
// agent's Swift types generate (Extension/protocol.schema.json, AutoFill's BrowserProtocolSchema).
//
// The extension's background (crypto.js, background.js, autofill.js, passkeys.js, unmodified) runs
// in a node `vm` context with a stand-in `chrome` API. Its native port reaches a stand-in agent that
// answers in the clear, opens a real sealed session with the extension's own crypto and unseals
// every request. The test then drives the extension as a browser would (its popup, unlock and
// chooser pages and content scripts send their messages; the in-page frame chooses rows), and
// every message the agent receives is validated against the schema with a small validator
// written here (node only: no npm). It fails on a message of an unknown type, a member of the
// wrong type or one the agent does not read, and when a request type was never exercised. The
// stand-in's own answers are checked against the reply schemas, so the flows run on what the real
// agent answers.
//
// Run: `node Tests/browser/protocol_schema_test.mjs` (ExtensionProtocolTests runs it); exit 1 on a problem.
import { readFileSync } from "node:fs";
import vm from "node:vm";

const root = new URL("../../", import.meta.url);
const schema = JSON.parse(readFileSync(new URL("Extension/protocol.schema.json", root)));
const vectors = JSON.parse(readFileSync(new URL("Tests/AutoFillTests/Fixtures/autofill-vectors.json", root)));
let failures = 0;
function fail(message) {
  failures += 1;
  console.error(`FAIL ${message}`);
}

// --- a JSON Schema validator for the keywords the generated schema uses ---

const KNOWN = new Set([
  "$schema", "title", "description", "$defs", "$ref", "type", "const", "enum", "minLength", "pattern", "items",
  "properties", "required", "additionalProperties", "oneOf",
]);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const typeOf = (value) =>
  value === null ? "null" : Array.isArray(value) ? "array" : Number.isInteger(value) ? "integer" : typeof value;

/** The problems of `value` against `node` (empty when it is valid). */
function validate(value, node, path = "message") {
  for (const keyword of Object.keys(node)) {
    if (!KNOWN.has(keyword)) throw new Error(`the schema uses ${keyword}, which this validator does not know`);
  }
  if (node.$ref) {
    const target = node.$ref.replace(/^#\/\$defs\//, "");
    if (!schema.$defs[target]) throw new Error(`no definition ${node.$ref}`);
    return validate(value, schema.$defs[target], path);
  }
  const problems = [];
  if ("const" in node && !same(value, node.const)) problems.push(`${path} must be ${JSON.stringify(node.const)}, not ${JSON.stringify(value)}`);
  if (node.enum && !node.enum.some((item) => same(item, value))) problems.push(`${path} must be one of ${node.enum.join(", ")}, not ${JSON.stringify(value)}`);
  if (node.type) {
    const actual = typeOf(value);
    const fits = actual === node.type || (node.type === "number" && actual === "integer");
    if (!fits) {
      problems.push(`${path} must be of type ${node.type}, not ${actual}`);
      return problems;
    }
  }
  if (typeof node.minLength === "number" && typeof value === "string" && value.length < node.minLength) problems.push(`${path} is too short`);
  if (node.pattern && typeof value === "string" && !new RegExp(node.pattern, "u").test(value)) problems.push(`${path} does not match ${node.pattern}`);
  if (node.items && Array.isArray(value)) value.forEach((item, index) => problems.push(...validate(item, node.items, `${path}[${index}]`)));
  if (node.properties && typeOf(value) === "object") {
    for (const name of node.required ?? []) if (!(name in value)) problems.push(`${path}.${name} is missing`);
    for (const [name, member] of Object.entries(value)) {
      if (node.properties[name]) problems.push(...validate(member, node.properties[name], `${path}.${name}`));
      else if (node.additionalProperties === false) problems.push(`${path}.${name} is not a member the agent reads`);
    }
  }
  if (node.oneOf) {
    const results = node.oneOf.map((branch) => validate(value, branch, path));
    const matching = results.filter((result) => result.length === 0).length;
    if (matching !== 1) {
      // Report the branch of the message's own type when there is one (the others differ in `type`).
      const own = results.find((result) => !result.some((problem) => problem.startsWith(`${path}.type must be`)));
      problems.push(matching > 1 ? `${path} matches ${matching} request types` : own ? own.join("; ") : `${path}: unknown request type ${JSON.stringify(value && value.type)}`);
    }
  }
  return problems;
}

// The validator itself refuses what it must: a green run means something.
const sealedSchema = { $ref: "#/$defs/sealedRequest" };
const clearSchema = { $ref: "#/$defs/clearRequest" };
for (const [name, message, part] of [
  ["an unknown request type", { v: 1, id: 1, type: "credential.delete", url: "https://a.example/" }, sealedSchema],
  ["a member of the wrong type", { v: 1, id: 1, type: "credential.save", url: "https://a.example/", password: 5 }, sealedSchema],
  ["an empty URL", { v: 1, id: 1, type: "credential.save", url: "", password: "x" }, sealedSchema],
  ["a member the agent does not read", { v: 1, id: 1, type: "state", verbose: true }, sealedSchema],
  ["a missing member", { v: 1, id: 1, type: "oneTimeCode.provide", url: "https://a.example/" }, sealedSchema],
  ["an unknown kind", { v: 1, id: 1, type: "identities.query", url: "https://a.example/", kinds: ["pin"] }, sealedSchema],
  ["a string id", { v: 1, id: "1", type: "state" }, sealedSchema],
  ["pairing of protocol 1", { v: 1, id: 1, type: "pair.begin", clientNonce: "AAAA" }, clearSchema],
  ["a nonce that is not base64url", { v: 2, id: 1, type: "pair.begin", clientNonce: "a+b/" }, clearSchema],
]) {
  if (validate(message, part).length === 0) fail(`the validator accepts ${name}`);
  else console.log(`ok the validator refuses ${name}`);
}
for (const message of [
  { v: 1, id: 1, type: "state" },
  { v: 1, id: 2, type: "credential.save", url: "https://a.example/", password: "x", user: "" },
]) {
  const problems = validate(message, sealedSchema);
  if (problems.length) fail(`the validator refuses ${JSON.stringify(message)}: ${problems.join("; ")}`);
}

// --- the extension's background, with a stand-in browser and agent ---

const EXTENSION_ID = "kh-test";
const EXTENSION_ORIGIN = `chrome-extension://${EXTENSION_ID}`;
const listeners = { message: null };
const storage = {};
const openedTabs = [];
const received = { clear: [], sealed: [] };
const event = () => ({ addListener() {} });

let agent = null; // the stand-in agent behind the native port
const chrome = {
  runtime: {
    id: EXTENSION_ID,
    lastError: null,
    getManifest: () => ({ version: "0.0.0-test" }),
    getURL: (path) => `${EXTENSION_ORIGIN}/${path}`,
    connectNative: () => {
      const port = { listeners: [], onDisconnect: event() };
      port.onMessage = { addListener: (listener) => port.listeners.push(listener) };
      port.postMessage = (message) => agent.receive(structuredClone(message));
      port.disconnect = () => (port.disconnected = true);
      agent = new Agent(port);
      return port;
    },
    onMessage: { addListener: (listener) => (listeners.message = listener) },
    onConnect: event(),
  },
  storage: {
    local: {
      get: async (key) => ({ [key]: storage[key] }),
      set: async (values) => Object.assign(storage, structuredClone(values)),
      remove: async (key) => delete storage[key],
    },
    onChanged: event(),
  },
  tabs: {
    create: async (properties) => {
      openedTabs.push(properties.url);
      return { id: 900 + openedTabs.length };
    },
    update: async () => ({}),
    remove: async () => {},
    query: async () => [{ id: 7 }],
    onRemoved: event(),
    // What content scripts answer: frames are shown and placed, and allow passkeys for the caller.
    sendMessage: async (tabId, message) => {
      switch (message.kind) {
        case "ui.visible":
          return { visible: true };
        case "passkey.show":
          return { shown: true };
        case "passkey.frameAllows":
          return { allow: "publickey-credentials-get *; publickey-credentials-create *", origin: "https://example.com", src: "https://pay.example/", parentFrameId: 0 };
        default:
          return {};
      }
    },
  },
};

const context = vm.createContext({
  chrome,
  console,
  crypto: globalThis.crypto,
  TextEncoder,
  TextDecoder,
  URL,
  atob,
  btoa,
  structuredClone,
  setTimeout,
  clearTimeout,
  navigator: { userAgent: "Chromium (node test)" },
  location: { origin: EXTENSION_ORIGIN },
});
context.self = context;
context.globalThis = context;
for (const file of ["crypto.js", "background.js", "autofill.js", "passkeys.js"]) {
  vm.runInContext(readFileSync(new URL(`Extension/${file}`, root), "utf8"), context, { filename: `Extension/${file}` });
}
const C = context.KeyhavenCrypto;
const inside = (expression) => vm.runInContext(expression, context);

/** The stand-in agent: answers the clear messages, then unseals and answers each sealed request. */
class Agent {
  constructor(port) {
    this.port = port;
    this.channel = null;
    this.pairFinishes = 0;
  }

  reply(message) {
    setTimeout(() => this.port.listeners.forEach((listener) => listener(message)), 0);
  }

  /** An event, sealed as the agent seals it, pushed on the session unasked. */
  async push(event) {
    const { n, sealed } = await this.channel.seal(new TextEncoder().encode(JSON.stringify(event)));
    this.reply({ v: 1, n, sealed: C.b64url(sealed) });
  }

  clearReply(type, message) {
    this.reply(checked(type, message));
  }

  async receive(message) {
    if (message.sealed === undefined) return this.clear(message);
    const plaintext = JSON.parse(new TextDecoder().decode(await this.channel.open(message.n, C.fromB64url(message.sealed))));
    received.sealed.push(plaintext);
    const { n, sealed } = await this.channel.seal(new TextEncoder().encode(JSON.stringify(checked(plaintext.type, this.answer(plaintext)))));
    this.reply({ v: 1, n, sealed: C.b64url(sealed) });
  }

  async clear(message) {
    received.clear.push(message);
    const ok = (answer) => this.clearReply(message.type, { v: message.v ?? 1, id: message.id, ok: answer });
    switch (message.type) {
      case "hello":
        return ok({ protocol: 2, agentVersion: "test", state: "unlocked" });
      case "pair.begin":
        return ok({ pairingRequest: "req-1", agentNonce: C.b64url(new Uint8Array(16).fill(3)), agentShare: C.b64url(new Uint8Array(Buffer.from(vectors.pairing.agentShare, "hex"))), suite: "CPACE-X25519-SHA512" });
      case "pair.finish":
        // The first code typed is wrong; the second try gets a tag the extension must refuse.
        this.pairFinishes += 1;
        if (this.pairFinishes === 1) return this.clearReply(message.type, { v: 2, id: message.id, error: { code: "userCanceled", localizedFailureReason: "The pairing code is wrong (2 more tries)." } });
        return ok({ pairingId: "p-test", agentConfirm: C.b64url(new Uint8Array(64)) });
      case "session.open": {
        const agentNonce = new Uint8Array(16).fill(9);
        const pairing = storage.pairing;
        const key = await C.sessionKeyBytes(C.fromB64url(pairing.key), C.fromB64url(message.clientNonce), agentNonce);
        this.channel = await C.channel(key, "agent");
        return ok({ agentNonce: C.b64url(agentNonce) });
      }
      default:
        return this.clearReply(message.type, { v: 1, id: message.id, error: { code: "notPaired", localizedFailureReason: "Open a session first." } });
    }
  }

  /** Plausible answers, so the extension's flows go on to their next request. */
  answer(request) {
    const identity = (kind, match = "exact") => ({ recordIdentifier: "r1", kind, user: "ada", serviceIdentifier: "example.com", rank: 1, match });
    const ok = (answer) => ({ v: 1, id: request.id, ok: answer });
    switch (request.type) {
      case "state":
        return ok({ state: "unlocked", revision: 1, supportsIncrementalUpdates: true });
      case "unlock":
      case "lock":
        return ok({ state: request.type === "unlock" ? "unlocked" : "locked" });
      case "identities.query":
        return ok({ revision: 1, identities: [identity((request.kinds ?? ["password"])[0])] });
      case "credentialList":
        return ok({ identities: [identity("password"), { ...identity("password"), recordIdentifier: "r2", user: "grace", match: undefined }] });
      case "credential.provideWithoutUserInteraction":
      case "credential.prepareInterface":
        return ok({ credential: { user: "ada", password: "old-pw" } });
      case "oneTimeCode.provide":
        return ok({ code: "123456", validUntil: "2026-11-27T12:00:30Z" });
      case "credential.save":
        return ok({ recordIdentifier: "r1", action: "updated" });
      case "password.generate":
        return ok({ password: "generated-Pw-1", rules: "", source: "default" });
      case "passkey.choices":
        return ok({ rpId: "example.com", user: "ada", displayName: "Ada", excluded: false, passkeys: [{ credentialId: "AQID", user: "ada", displayName: "Ada" }], verificationRequired: false });
      case "passkey.register":
      case "passkey.assert":
        return ok({ responseJson: { id: "AQID", type: "public-key", response: {} } });
      case "verify":
        return ok({ verified: true });
      case "passkey.signal":
        return ok({ changed: 0 });
      default:
        return { v: 1, id: request.id, error: { code: "badRequest", localizedFailureReason: `Unknown request type ${request.type}.` } };
    }
  }
}

/** The stand-in's answers are the agent's too: each `ok` against its `reply:TYPE` schema (generated
 *  from the agent's reply types), each `error` against `error`. */
function checked(type, reply) {
  const wire = JSON.parse(JSON.stringify(reply));
  const part = wire.error ? "#/$defs/error" : `#/$defs/reply:${type}`;
  const problems = schema.$defs[part.slice(8)] ? validate(wire.error ?? wire.ok, { $ref: part }, "reply") : [`no schema ${part}`];
  if (problems.length) fail(`the stand-in's answer to ${type} is not the agent's: ${problems.join("; ")}`);
  else repliesChecked.add(part);
  return reply;
}
const repliesChecked = new Set();

/** A message from one of the extension's pages or content scripts, through the real router. */
function send(message, sender) {
  return new Promise((resolve) => {
    const handled = listeners.message(message, { id: EXTENSION_ID, ...sender }, resolve);
    if (!handled) resolve(undefined);
  });
}
const pageSender = (page = "popup.html") => ({ origin: EXTENSION_ORIGIN, url: `${EXTENSION_ORIGIN}/${page}` });
const tab = { id: 7, url: "https://example.com/login" };
const contentSender = (frame = {}) => ({ tab, frameId: 0, url: tab.url, origin: "https://example.com", ...frame });
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

/** Opens the in-page menu for a field of `kind` and returns its session (the rows it shows). */
async function menu(field, extra = {}, frame = {}) {
  const sender = contentSender(frame);
  const { frameToken } = (await send({ kind: "ui.preload" }, sender)).ok;
  const opened = await send({ kind: "menu.open", frameToken, field, ...extra }, sender);
  if (!opened.ok || !opened.ok.token) throw new Error(`no menu for ${JSON.stringify(field)}: ${JSON.stringify(opened)}`);
  return inside("uiSessions").get(opened.ok.token);
}

/** The person chooses the row whose text starts with `text` in the frame showing `session`. */
async function choose(session, text) {
  const index = session.rows.findIndex((row) => row.action && row.text.startsWith(text));
  if (index < 0) throw new Error(`no row ${text} in ${session.rows.map((row) => row.text).join(" | ")}`);
  await inside("choose")(session, index);
  await settle();
}

async function step(name, body) {
  try {
    await body();
    console.log(`ok ${name}`);
  } catch (error) {
    fail(`${name}: ${error && error.stack ? error.stack : JSON.stringify(error)}`);
  }
}

// Pairing (the popup): a wrong code, another try of the same request, then a tag that does not check.
await step("pairing", async () => {
  const begun = await send({ kind: "pair.begin" }, pageSender());
  if (!begun.ok) throw begun.error;
  const wrong = await send({ kind: "pair.finish", code: "111 111" }, pageSender());
  if (wrong.error?.code !== "userCanceled") throw new Error(`wrong code: ${JSON.stringify(wrong)}`);
  const refused = await send({ kind: "pair.finish", code: "222 222" }, pageSender());
  if (!refused.error) throw new Error("a tag that does not check is refused");
  if (!received.clear.some((message) => message.type === "pair.begin" && message.pairingRequest === "req-1")) {
    throw new Error("the second try is another try of the same request");
  }
});

storage.pairing = { id: "p-test", key: C.b64url(new Uint8Array(32).fill(1)) };
storage.conditionalCreate = true;

await step("status and unlock (popup, unlock page)", async () => {
  const status = await send({ kind: "status" }, pageSender());
  if (status.ok?.state !== "unlocked") throw new Error(JSON.stringify(status));
  const unlocked = await send({ kind: "unlock", masterPassword: "correct horse" }, pageSender("unlock.html"));
  if (!unlocked.ok) throw new Error(JSON.stringify(unlocked));
});

await step("fill a password, a one-time code and a generated password (menu rows)", async () => {
  await choose(await menu({ kind: "password" }), "ada");
  await choose(await menu({ kind: "otp" }), "ada");
  await choose(await menu({ kind: "new-password", passwordRules: "minlength: 20; required: digit;" }), "Use strong password");
  await choose(await menu({ kind: "new-password" }), "Use strong password");
});

await step("other passwords (the chooser page)", async () => {
  await choose(await menu({ kind: "username" }), "Other passwords");
  const token = new URL(openedTabs.at(-1)).hash.slice(1);
  const contents = await send({ kind: "chooser.get", token }, pageSender("chooser.html"));
  if (!contents.ok) throw new Error(JSON.stringify(contents));
  const filled = await send({ kind: "chooser.fill", token, index: 1 }, pageSender("chooser.html"));
  if (!filled.ok) throw new Error(JSON.stringify(filled));
});

await step("save a submitted password (the prompt)", async () => {
  const sender = contentSender();
  await send({ kind: "submitted", user: "ada", password: "new-pw" }, sender);
  const { frameToken } = (await send({ kind: "ui.preload" }, sender)).ok;
  const prompt = await send({ kind: "pendingSave", frameToken }, sender);
  if (!prompt.ok?.token) throw new Error(JSON.stringify(prompt));
  await choose(inside("uiSessions").get(prompt.ok.token), "Update");
});

await step("passkey signals, hostile members included", async () => {
  for (const signal of [
    { kind: "unknownCredential", rpId: "example.com", credentialId: "AQID" },
    { kind: "allAcceptedCredentials", rpId: "example.com", userId: "AQ", allAcceptedCredentialIds: ["AQID", 5, { x: 1 }] },
    { kind: "currentUserDetails", rpId: "example.com", userId: "AQ", name: "ada", displayName: "Ada" },
    // A page's wrong types: nothing but strings reaches the agent where it reads strings.
    { kind: "currentUserDetails", rpId: ["example.com"], userId: "AQ", name: ["ada"], displayName: 7 },
    { kind: "unknownCredential", rpId: "example.com", credentialId: ["AQID"], type: "unlock", v: 9, id: "x" },
  ]) {
    await send({ kind: "passkey.signal", signal }, contentSender());
  }
});

await step("conditional create after a password fill", async () => {
  await choose(await menu({ kind: "password" }), "ada");
  const made = await send({ kind: "passkey.conditionalCreate", options: { user: { name: "ada" }, challenge: "AA" }, ancestry: { sameOriginWithAncestors: true } }, contentSender());
  if (!made.ok?.responseJson) throw new Error(JSON.stringify(made));
});

await step("conditional get in the menu", async () => {
  const session = await menu({ kind: "password" }, { conditional: { id: "c1", options: { challenge: "AA", rpId: "example.com" } }, ancestry: { sameOriginWithAncestors: true } });
  await choose(session, "ada");
  const framed = await menu(
    { kind: "password" },
    { conditional: { id: "c2", options: { challenge: "AA" } }, ancestry: { sameOriginWithAncestors: false, parentFrameId: 0 } },
    { frameId: 3, url: "https://pay.example/card", origin: "https://pay.example" }
  );
  await choose(framed, "ada");
});

await step("a page's create() and get() through the sheet (Firefox's page calls)", async () => {
  for (const [call, row, frame] of [
    [{ kind: "create", options: { challenge: "AA", rp: { id: "example.com" }, user: { id: "AQ", name: "ada" } } }, "Save passkey", {}],
    [{ kind: "get", options: { challenge: "AA" } }, "ada", {}],
    [{ kind: "get", options: { challenge: "AA" } }, "ada", { frameId: 3, url: "https://pay.example/card", origin: "https://pay.example" }],
  ]) {
    const sender = contentSender(frame);
    const ancestry = frame.frameId ? { sameOriginWithAncestors: false, parentFrameId: 0 } : { sameOriginWithAncestors: true };
    const answer = send({ kind: "passkey.page", call, ancestry }, sender);
    await settle();
    const id = [...inside("passkeyCalls").keys()].at(-1);
    if (!id) throw new Error(`no call for ${call.kind}`);
    const { frameToken } = (await send({ kind: "ui.preload" }, sender)).ok;
    const shown = await send({ kind: "passkey.sheet", request: id, frameToken }, sender);
    if (!shown.ok?.token) throw new Error(JSON.stringify(shown));
    await choose(inside("uiSessions").get(shown.ok.token), row);
    const done = await answer;
    if (!done.ok?.responseJson) throw new Error(`${call.kind}: ${JSON.stringify(done)}`);
  }
});

await step("verify in Keyhaven's page, then the sheet asks again", async () => {
  const sender = contentSender();
  const answer = send({ kind: "passkey.page", call: { kind: "get", options: { challenge: "AA" } }, ancestry: { sameOriginWithAncestors: true } }, sender);
  await settle();
  const id = [...inside("passkeyCalls").keys()].at(-1);
  const { frameToken } = (await send({ kind: "ui.preload" }, sender)).ok;
  await send({ kind: "passkey.sheet", request: id, frameToken }, sender);
  await inside("verifyRequest")(inside("passkeyCalls").get(id));
  const verified = await send({ kind: "passkey.verified", masterPassword: "correct horse" }, pageSender("unlock.html?verify=1"));
  if (!verified.ok?.verified) throw new Error(JSON.stringify(verified));
  inside("endCall")(id, "NotAllowedError", "done");
  await answer;
});

// --- the agent's events: every shape the schema describes is handled, anything else ignored ---

/** Values `node` describes: each enum value and constant; objects with every member, and with the
 *  required ones only; lists of one item. Each is checked against `node` before it is used. */
function instances(node) {
  if (node.$ref) return instances(schema.$defs[node.$ref.replace(/^#\/\$defs\//, "")]);
  if ("const" in node) return [node.const];
  if (node.enum) return [...node.enum];
  switch (node.type) {
    case "string":
      return node.pattern ? ["AQID"] : ["x"];
    case "integer":
    case "number":
      return [7];
    case "boolean":
      return [true, false];
    case "array":
      return [[], [instances(node.items)[0]]];
    case "object": {
      const properties = Object.entries(node.properties ?? {});
      const full = Object.fromEntries(properties.map(([name, member]) => [name, instances(member)[0]]));
      const required = Object.fromEntries(properties.filter(([name]) => node.required.includes(name)).map(([name, member]) => [name, instances(member)[0]]));
      const variants = [full, required];
      for (const [name, member] of properties) {
        for (const value of instances(member).slice(1)) variants.push({ ...full, [name]: value });
      }
      return variants;
    }
    default:
      return [{}];
  }
}

/** The names the extension's event handler compares `event` with (background.js, `onEvent`). */
const handlerSource = String(inside("onEvent"));
const handledNames = new Set([...handlerSource.matchAll(/event\.event === "([^"]+)"/g)].map((match) => match[1]));
const eventShapes = schema.$defs.event?.oneOf ?? [];
const schemaNames = new Set(eventShapes.map(({ $ref }) => validateRef($ref) && schema.$defs[$ref.replace("#/$defs/", "")].properties.event.const));
function validateRef(ref) {
  if (!schema.$defs[ref.replace("#/$defs/", "")]) throw new Error(`no definition ${ref}`);
  return true;
}

/** Pushes `event` on the open session; what the extension did: whether it dropped its identity
 *  cache, what it told the passkey proxy, whether it ended the connection. */
async function pushEvent(event) {
  const cache = inside("cache");
  cache.set("sentinel", Promise.resolve(null));
  const proxyCalls = [];
  context.syncPasskeyProxy = async (unlocked) => proxyCalls.push(unlocked);
  const port = agent.port;
  await agent.push(event);
  // Its frame reaches the port on the next turn; then the extension's inbox holds its handling.
  await new Promise((resolve) => setTimeout(resolve, 0));
  await inside("inbox");
  context.syncPasskeyProxy = realSyncPasskeyProxy;
  return { cleared: !cache.has("sentinel"), proxyCalls, disconnected: port.disconnected === true || inside("port") !== port };
}
const realSyncPasskeyProxy = context.syncPasskeyProxy;

await step("the events the extension handles are the schema's", async () => {
  if (eventShapes.length === 0) throw new Error("the schema describes no events (#/$defs/event)");
  const missing = [...schemaNames].filter((name) => !handledNames.has(name));
  const extra = [...handledNames].filter((name) => !schemaNames.has(name));
  if (missing.length || extra.length) throw new Error(`background.js onEvent handles ${[...handledNames].join(", ")}; the schema's events are ${[...schemaNames].join(", ")}`);
});

await step("every event shape of the schema is handled", async () => {
  if (eventShapes.length === 0) throw new Error("the schema describes no events (#/$defs/event)");
  const opened = await send({ kind: "status" }, pageSender());
  if (opened.ok?.state !== "unlocked") throw new Error(`no session: ${JSON.stringify(opened)}`);
  for (const { $ref } of eventShapes) {
    const shape = $ref.replace("#/$defs/", "");
    const events = instances({ $ref });
    for (const event of events) {
      const problems = validate(event, { $ref }, shape);
      if (problems.length) throw new Error(`the test made an invalid ${shape}: ${problems.join("; ")}`);
      const seen = await pushEvent(event);
      if (seen.disconnected) throw new Error(`${JSON.stringify(event)} ended the connection`);
      if (!seen.cleared) throw new Error(`${JSON.stringify(event)} left the extension's identities in its cache`);
      const proxy = event.event === "state" ? [event.state === "unlocked"] : [];
      if (!same(seen.proxyCalls, proxy)) throw new Error(`${JSON.stringify(event)} told the passkey proxy ${JSON.stringify(seen.proxyCalls)}, not ${JSON.stringify(proxy)}`);
    }
    console.log(`ok ${shape} handled (${events.length} forms)`);
  }
  // The counters stayed in step: the session still answers.
  const after = await send({ kind: "status" }, pageSender());
  if (after.ok?.state !== "unlocked") throw new Error(`the session broke after the events: ${JSON.stringify(after)}`);
});

await step("the extension ignores an unknown event", async () => {
  for (const event of [
    { v: 1, event: "vault.exploded", revision: 9, replaced: true },
    { v: 1, event: "identities.changed.v2", state: "locked" },
    { v: 1, event: "__proto__" },
  ]) {
    if (eventShapes.some(({ $ref }) => validate(event, { $ref }).length === 0)) throw new Error(`${JSON.stringify(event)} is in the schema`);
    const seen = await pushEvent(event);
    if (seen.disconnected || seen.cleared || seen.proxyCalls.length) throw new Error(`${JSON.stringify(event)} was acted on: ${JSON.stringify(seen)}`);
  }
  const after = await send({ kind: "status" }, pageSender());
  if (after.ok?.state !== "unlocked") throw new Error(`the session broke after unknown events: ${JSON.stringify(after)}`);
});

// --- what the agent received ---

await settle();
const seen = { sealed: new Set(), clear: new Set() };
for (const [part, messages] of [["sealed", received.sealed], ["clear", received.clear]]) {
  for (const message of messages) {
    seen[part].add(message.type);
    const problems = validate(message, { $ref: `#/$defs/${part}Request` });
    if (problems.length) fail(`${part} ${JSON.stringify(message)}: ${problems.join("; ")}`);
  }
}
console.log(`checked ${received.clear.length} clear and ${received.sealed.length} sealed messages against the schema`);
console.log(`checked the stand-in's answers against ${repliesChecked.size} reply schemas`);
for (const [part, list] of [["sealed", schema.$defs.sealedRequest.oneOf], ["clear", schema.$defs.clearRequest.oneOf]]) {
  for (const { $ref } of list) {
    const type = $ref.replace("#/$defs/", "");
    if (seen[part].has(type)) console.log(`ok ${part} ${type} sent and valid`);
    else if (type !== "lock") fail(`the test never made the extension send ${type}`);
  }
}
// The paths that add optional members ran too.
for (const [name, found] of [
  ["a cross-origin caller (crossOrigin, topOrigin)", received.sealed.some((m) => m.type === "passkey.assert" && m.crossOrigin === true && m.topOrigin)],
  ["a silent conditional create (userPresent: false)", received.sealed.some((m) => m.type === "passkey.register" && m.userPresent === false)],
  ["a one-time code query", received.sealed.some((m) => m.type === "identities.query" && m.kinds?.[0] === "oneTimeCode")],
  ["a field's passwordrules", received.sealed.some((m) => m.type === "password.generate" && typeof m.passwordRules === "string")],
  ["a pick from the whole list", received.sealed.some((m) => m.type === "credential.prepareInterface" && m.fromCredentialList === true)],
  ["a list of accepted ids", received.sealed.some((m) => m.type === "passkey.signal" && Array.isArray(m.allAcceptedCredentialIds))],
]) {
  if (found) console.log(`ok sent ${name}`);
  else fail(`the test never made the extension send ${name}`);
}
// The extension has no "lock" request of its own (the popup locks through `keyhaven lock`).
if (seen.sealed.has("lock")) fail("the extension sends lock now: remove the exception above");
process.exit(failures === 0 ? 0 : 1);
