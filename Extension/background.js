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
const pendingSaves = new Map();
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
    // `v` and `id` last: fields that came from a page can never set them.
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

// --- what content scripts ask ---

function frameURLs(sender) {
  return { url: sender.url, topURL: sender.tab ? sender.tab.url : sender.url };
}

async function openUnlock(sender) {
  pendingRetry = sender.tab ? { tabId: sender.tab.id, frameId: sender.frameId ?? 0 } : null;
  await api.tabs.create({ url: api.runtime.getURL("unlock.html") });
}

async function handle(message, sender) {
  if (String(message.kind).startsWith("passkey.")) return handlePasskeyMessage(message, sender);
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
      if (pendingRetry) {
        const { tabId, frameId } = pendingRetry;
        pendingRetry = null;
        api.tabs.sendMessage(tabId, { kind: "retryFill" }, { frameId }).catch(() => {});
        if (sender.tab) api.tabs.remove(sender.tab.id).catch(() => {});
        api.tabs.update(tabId, { active: true }).catch(() => {});
      }
      return result;
    }
    case "query": {
      const { url, topURL } = frameURLs(sender);
      const key = url + "\n" + (message.kinds ?? []).join(",");
      if (!cache.has(key)) cache.set(key, request({ type: "identities.query", url, topURL, kinds: message.kinds }));
      try {
        return await cache.get(key);
      } catch (error) {
        cache.delete(key);
        if (error.code === "locked") await openUnlock(sender);
        throw error;
      }
    }
    case "fill": {
      const { url, topURL } = frameURLs(sender);
      const type = message.confirmed ? "credential.prepareInterface" : "credential.provideWithoutUserInteraction";
      try {
        const filled = await request({
          type, recordIdentifier: message.recordIdentifier, url, topURL, confirmed: !!message.confirmed,
          fromCredentialList: !!message.fromCredentialList, deadlineMs: 2000,
        });
        notePasswordFill(sender, filled.credential.user);
        return filled;
      } catch (error) {
        if (error.code === "locked") await openUnlock(sender);
        throw error;
      }
    }
    case "list": {
      const { url, topURL } = frameURLs(sender);
      return request({ type: "credentialList", url, topURL });
    }
    case "otp": {
      const { url, topURL } = frameURLs(sender);
      return request({ type: "oneTimeCode.provide", recordIdentifier: message.recordIdentifier, url, topURL, confirmed: !!message.confirmed });
    }
    case "generate":
      return request({ type: "password.generate", url: sender.url, passwordRules: message.passwordRules || undefined });
    case "submitted": {
      if (!sender.tab || !message.password) return {};
      pendingSaves.set(sender.tab.id, { url: sender.url, user: message.user ?? "", password: message.password, at: Date.now() });
      return {};
    }
    case "pendingSave": {
      const pending = sender.tab && pendingSaves.get(sender.tab.id);
      if (!pending || Date.now() - pending.at > 60000) return { action: null };
      const identities = await request({ type: "identities.query", url: pending.url, kinds: ["password"] });
      const same = identities.identities.find((identity) => identity.user === pending.user && identity.match === "exact");
      let action = "save";
      if (same) {
        try {
          const current = await request({
            type: "credential.provideWithoutUserInteraction", recordIdentifier: same.recordIdentifier,
            url: pending.url, topURL: pending.url,
          });
          action = current.credential.password === pending.password ? null : "update";
        } catch {
          action = "update";
        }
      }
      if (action === null) pendingSaves.delete(sender.tab.id);
      return { action, user: pending.user, host: new URL(pending.url).host };
    }
    case "save": {
      const pending = sender.tab && pendingSaves.get(sender.tab.id);
      if (!pending) throw failure("failed", "Nothing to save.");
      pendingSaves.delete(sender.tab.id);
      cache.clear();
      return request({ type: "credential.save", url: pending.url, user: pending.user, password: pending.password });
    }
    case "dismissSave":
      if (sender.tab) pendingSaves.delete(sender.tab.id);
      return {};
    default:
      throw failure("badRequest", "Unknown message.");
  }
}

api.runtime.onMessage.addListener((message, sender, sendResponse) => {
  if (sender.id !== api.runtime.id) return false;
  handle(message, sender).then(
    (ok) => sendResponse({ ok }),
    (error) => sendResponse({ error: error && error.code ? error : failure("failed", String(error && error.message ? error.message : error)) })
  );
  return true;
});

// The passkey authenticator (Chromium's webAuthenticationProxy, signals): passkeys.js, loaded
// last because it uses what this file defines (Firefox lists it after this file).
if (typeof syncPasskeyProxy === "undefined" && typeof importScripts === "function") importScripts("passkeys.js");

// A browser that starts with Keyhaven already unlocked attaches at once.
pairingRecord().then((pairing) => pairing && status().then((state) => syncPasskeyProxy(state.state === "unlocked")));
