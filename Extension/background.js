// Keyhaven AutoFill's background (a Chromium service worker, or a Firefox background script):
// one native-messaging port to `keyhaven browser-host`, the pairing and the sealed session of
// docs/autofill-protocol.md, and the requests of content scripts, to which it adds the URLs the
// BROWSER reports for the calling frame and its tab (never what a page could claim).
"use strict";

if (typeof KeyhavenCrypto === "undefined" && typeof importScripts === "function") importScripts("crypto.js");

const api = globalThis.browser ?? globalThis.chrome;
const C = globalThis.KeyhavenCrypto;
const HOST = "dev.keyhaven.autofill";
const BROWSER = typeof globalThis.browser !== "undefined" && navigator.userAgent.includes("Firefox") ? "firefox" : "chromium";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

let port = null;
let channel = null;
let sessionPromise = null;
let nextId = 1;
let outbox = Promise.resolve();
let inbox = Promise.resolve();
const clearPending = new Map();
const sealedPending = new Map();
let hostError = null;
let pendingPair = null;
let pendingRetry = null;
const cache = new Map();

function failure(code, reason) {
  return { code, localizedFailureReason: reason };
}

function disconnected() {
  const error = hostError ?? failure("failed", (api.runtime.lastError && api.runtime.lastError.message) || "Keyhaven's browser host is not available.");
  for (const resolve of [...clearPending.values(), ...sealedPending.values()]) resolve({ error });
  clearPending.clear();
  sealedPending.clear();
  port = null;
  channel = null;
  cache.clear();
  syncPasskeyProxy(false);
}

function connect() {
  hostError = null;
  port = api.runtime.connectNative(HOST);
  port.onMessage.addListener(onNative);
  port.onDisconnect.addListener(disconnected);
}

function onNative(message) {
  if (message.sealed !== undefined) {
    inbox = inbox
      .then(async () => {
        const inner = JSON.parse(decoder.decode(await channel.open(message.n, C.fromB64url(message.sealed))));
        if (inner.event) return onEvent(inner);
        const resolve = sealedPending.get(inner.id);
        sealedPending.delete(inner.id);
        if (resolve) resolve(inner);
      })
      .catch(() => port && port.disconnect());
    return;
  }
  const resolve = clearPending.get(message.id);
  if (resolve) {
    clearPending.delete(message.id);
    resolve(message);
  } else if (message.error) {
    hostError = message.error; // the host's own refusal (not our extension, no agent)
  }
}

function onEvent(event) {
  if (event.event === "identities.changed" || event.event === "state") cache.clear();
  if (event.event === "state") syncPasskeyProxy(event.state === "unlocked");
}

function sendClear(fields) {
  if (!port) connect();
  const id = nextId++;
  return new Promise((resolve) => {
    clearPending.set(id, resolve);
    port.postMessage({ v: 1, id, ...fields });
  });
}

async function pairingRecord() {
  return (await api.storage.local.get("pairing")).pairing ?? null;
}

async function ensureSession() {
  if (channel && port) return;
  if (!sessionPromise) {
    sessionPromise = (async () => {
      if (!port) connect();
      const hello = await sendClear({ type: "hello", extensionVersion: api.runtime.getManifest().version, browser: BROWSER });
      if (hello.error) throw hello.error;
      const pairing = await pairingRecord();
      if (!pairing) throw failure("notPaired", "Pair this browser with Keyhaven: click the Keyhaven icon.");
      const clientNonce = crypto.getRandomValues(new Uint8Array(16));
      const opened = await sendClear({ type: "session.open", pairingId: pairing.id, clientNonce: C.b64url(clientNonce) });
      if (opened.error) {
        if (opened.error.code === "notPaired") await api.storage.local.remove("pairing");
        throw opened.error;
      }
      const key = await C.sessionKeyBytes(C.fromB64url(pairing.key), clientNonce, C.fromB64url(opened.ok.agentNonce));
      channel = await C.channel(key, "extension");
    })().finally(() => {
      sessionPromise = null;
    });
  }
  return sessionPromise;
}

/** A sealed request: its `ok`, or throws `{code, localizedFailureReason}`. */
async function request(fields) {
  await ensureSession();
  const id = nextId++;
  const reply = new Promise((resolve) => sealedPending.set(id, resolve));
  outbox = outbox.then(async () => {
    // `v` and `id` last: nothing a page supplied among `fields` can set them.
    const { n, sealed } = await channel.seal(encoder.encode(JSON.stringify({ ...fields, v: 1, id })));
    port.postMessage({ v: 1, n, sealed: C.b64url(sealed) });
  });
  await outbox;
  const answer = await reply;
  if (answer.error) {
    if (answer.error.code === "notPaired") {
      await api.storage.local.remove("pairing");
      channel = null;
    }
    throw answer.error;
  }
  return answer.ok;
}

// --- pairing (the popup) ---

// Pairing is protocol 2 (docs/autofill-protocol.md §2.2): CPace from the code the agent shows, with
// the agent's share in pair.begin's reply, ours and our tag in pair.finish, and the agent's tag
// back, so a relay in the middle learns nothing it could test a code against. Each try (each code
// typed) is a fresh run; the agent counts the wrong ones (3 per request, 5 minutes).

/** Who we are as the native host sees it (its command line): part of CPace's channel identifier. */
function callerIdentity() {
  return BROWSER === "firefox" ? api.runtime.id : api.runtime.getURL("");
}

/** pair.begin: a new request (the agent shows a code), or another try of `request`. */
async function startPairingTry(request) {
  const clientNonce = crypto.getRandomValues(new Uint8Array(16));
  const begun = await sendClear({
    v: 2,
    type: "pair.begin",
    clientNonce: C.b64url(clientNonce),
    ...(request ? { pairingRequest: request } : {}),
  });
  if (begun.error) {
    if (begun.error.code === "notPaired") pendingPair = null;
    throw begun.error;
  }
  return {
    request: begun.ok.pairingRequest,
    clientNonce,
    agentNonce: C.fromB64url(begun.ok.agentNonce),
    agentShare: C.fromB64url(begun.ok.agentShare),
  };
}

async function beginPairing() {
  if (!port) connect();
  const hello = await sendClear({ type: "hello", extensionVersion: api.runtime.getManifest().version, browser: BROWSER });
  if (hello.error) throw hello.error;
  if (!(hello.ok.protocol >= 2)) {
    throw failure("failed", "Keyhaven's agent is older than this extension: update keyhaven, restart its agent, and pair again.");
  }
  pendingPair = await startPairingTry(null);
  return { started: true };
}

async function finishPairing(code) {
  if (!pendingPair) throw failure("notPaired", "Start pairing again.");
  // After a wrong code the agent wants a new try (a fresh share) for the next guess.
  const attempt = pendingPair.agentShare ? pendingPair : await startPairingTry(pendingPair.request);
  pendingPair = { request: attempt.request }; // this try is spent, whatever the answer
  let keys;
  try {
    keys = await C.pairingResponse(
      {
        code: code.replace(/\s+/g, ""),
        request: attempt.request,
        browser: BROWSER,
        caller: callerIdentity(),
        clientNonce: attempt.clientNonce,
        agentNonce: attempt.agentNonce,
      },
      attempt.agentShare,
    );
  } catch {
    pendingPair = null;
    throw failure("failed", "Keyhaven's agent sent an invalid pairing message: start pairing again.");
  }
  const finished = await sendClear({
    v: 2,
    type: "pair.finish",
    pairingRequest: attempt.request,
    clientShare: C.b64url(keys.clientShare),
    clientConfirm: C.b64url(keys.clientConfirm),
  });
  if (finished.error) {
    if (finished.error.code === "notPaired") pendingPair = null;
    throw finished.error;
  }
  pendingPair = null;
  // The agent's tag shows it ran CPace with the same code: a stand-in that did not know it cannot make one.
  if (!C.equal(C.fromB64url(String(finished.ok.agentConfirm ?? "")), keys.agentConfirm)) {
    throw failure("failed", "The agent that answered could not prove it showed this code, so nothing was paired: start pairing again.");
  }
  await api.storage.local.set({ pairing: { id: finished.ok.pairingId, key: C.b64url(keys.pairingKey) } });
  channel = null;
  status().then((state) => syncPasskeyProxy(state.state === "unlocked"));
  return { paired: true, pairingId: finished.ok.pairingId };
}

async function status() {
  const pairing = await pairingRecord();
  if (!pairing) return { paired: false };
  try {
    const state = await request({ type: "state" });
    return { paired: true, state: state.state };
  } catch (error) {
    return { paired: (await pairingRecord()) !== null, error };
  }
}

// --- who asks ---

/** A page of this extension (the popup, the unlock and chooser pages, the in-page frame ui.html):
 *  its origin is the extension's own, which no web page and no content script can claim. */
function fromExtensionPage(sender) {
  const origin = sender.origin ?? (sender.url ? new URL(sender.url).origin : "");
  return sender.id === api.runtime.id && origin === self.location.origin;
}

function frameURLs(sender) {
  return { url: sender.url, topURL: sender.tab ? sender.tab.url : sender.url };
}

async function openUnlock(sender, retry = null) {
  pendingRetry = retry;
  await api.tabs.create({ url: api.runtime.getURL("unlock.html") });
}

/** What the extension's own pages ask (never a content script: those would be the page's word). */
async function handlePage(message, sender) {
  switch (message.kind) {
    case "status":
      return status();
    case "pair.begin":
      return beginPairing();
    case "pair.finish":
      return finishPairing(String(message.code ?? ""));
    case "unlock": {
      const result = await request({ type: "unlock", masterPassword: message.masterPassword });
      syncPasskeyProxy(true);
      cache.clear();
      if (pendingRetry) {
        const { tabId, frameId, frameToken } = pendingRetry;
        pendingRetry = null;
        api.tabs.sendMessage(tabId, { kind: "ui.reoffer", frameToken }, { frameId }).catch(() => {});
        if (sender.tab) api.tabs.remove(sender.tab.id).catch(() => {});
        api.tabs.update(tabId, { active: true }).catch(() => {});
      }
      return result;
    }
    case "passkey.verified":
      if (!sender.url || !sender.url.startsWith(api.runtime.getURL("unlock.html"))) {
        throw failure("badRequest", "Only Keyhaven's unlock page verifies.");
      }
      return verifyForPasskey(message, sender);
    case "chooser.get":
      return chooserContents(message, sender);
    case "chooser.fill":
      return chooserFill(message, sender);
    default:
      throw failure("badRequest", "Unknown message.");
  }
}

/** What a content script asks on behalf of its page. None of it releases a secret: secrets go to a
 *  frame only after the person chose in Keyhaven's own frame or page (autofill.js). */
async function handleContent(message, sender) {
  if (!sender.tab) throw failure("badRequest", "Only pages in a tab ask Keyhaven.");
  switch (message.kind) {
    case "ui.preload":
      return preloadFrame(sender);
    case "ui.gone":
      return forgetFrame(String(message.frameToken ?? ""), sender);
    case "ui.closed":
      return closedByPage(String(message.token ?? ""), sender);
    case "ui.focus":
      return focusFrame(String(message.token ?? ""), sender);
    case "menu.open":
      return openMenu(message, sender);
    case "submitted":
      return noteSubmitted(message, sender);
    case "pendingSave":
      return offerSave(message, sender);
    case "passkey.sheet":
      return showPasskeySheet(message, sender);
    case "passkey.signal":
    case "passkey.conditionalCreate":
    case "passkey.page":
      return handlePasskeyMessage(message, sender);
    default:
      throw failure("badRequest", "Unknown message.");
  }
}

api.runtime.onMessage.addListener((message, sender, sendResponse) => {
  if (sender.id !== api.runtime.id || !message || typeof message.kind !== "string") return false;
  const handler = fromExtensionPage(sender) ? handlePage : handleContent;
  handler(message, sender).then(
    (ok) => sendResponse({ ok }),
    (error) => sendResponse({ error: error && error.code ? error : failure("failed", String(error && error.message ? error.message : error)) })
  );
  return true;
});

// The in-page frames (ui.js) keep a port open: what to show goes down it, the person's choice up.
api.runtime.onConnect.addListener((port) => {
  if (port.name === "keyhaven-ui" && fromExtensionPage(port.sender)) attachFrame(port);
});

// The in-page UI, fills and saves (autofill.js) and the passkey authenticator (Chromium's
// webAuthenticationProxy, signals: passkeys.js), loaded last because they use what this file
// defines (Firefox lists them after this file).
if (typeof openMenu === "undefined" && typeof importScripts === "function") importScripts("autofill.js");
if (typeof syncPasskeyProxy === "undefined" && typeof importScripts === "function") importScripts("passkeys.js");

// A browser that starts with Keyhaven already unlocked attaches at once.
pairingRecord().then((pairing) => pairing && status().then((state) => syncPasskeyProxy(state.state === "unlocked")));
