// Keyhaven as the browser's passkey authenticator (part of the background; docs/autofill-protocol.md
// §2.5). Chromium: `chrome.webAuthenticationProxy` hands every WebAuthn create()/get() of every
// page to this extension while it is attached — only while the agent is unlocked and passkeys are
// on, so a locked Keyhaven never stands between a site and a security key. The browser itself
// checks the rpId and reports the caller's origin (requestDetailsJson's remoteDesktopClientOverride);
// the page never claims it. Each call shows Keyhaven's sheet in the calling frame (content.js): the
// person's choice there is the user presence, the agent signs. Signals (PublicKeyCredential.signal*) come from the
// page-world wrapper (page-passkeys.js) through the content relay, with the origin the browser gives
// the sender.
"use strict";

const passkeyCalls = new Map(); // call id -> {kind, requestId, options, origin, tabId, frameId, page}
let proxyAttached = false;
let proxyDeclinedUntil = 0;
// Whether the agent was unlocked when last heard (Firefox's page-world calls ask before using it).
let agentUnlocked = false;

const DOM_ERRORS = {
  matchedExcludedCredential: "InvalidStateError",
  originNotAllowed: "SecurityError",
  badRequest: "NotAllowedError",
};

// Conditional create: the last password Keyhaven filled in each tab (origin, user, when). A site's
// `create({mediation: "conditional"})` for that account within five minutes makes a passkey without
// asking — only when the person turned "Upgrade to passkeys after a password fill" on.
const recentFills = new Map();
const CONDITIONAL_CREATE_WINDOW = 5 * 60 * 1000;

function notePasswordFill(sender, user) {
  if (!sender.tab) return;
  recentFills.set(sender.tab.id, { origin: sender.origin ?? new URL(sender.url).origin, user, at: Date.now() });
}

async function conditionalCreateEnabled() {
  return (await api.storage.local.get("conditionalCreate")).conditionalCreate === true;
}

async function passkeysEnabled() {
  return (await api.storage.local.get("passkeys")).passkeys !== false;
}

/** Attaches the proxy when the agent is unlocked and passkeys are on; detaches otherwise. */
async function syncPasskeyProxy(unlocked) {
  agentUnlocked = unlocked;
  const proxy = api.webAuthenticationProxy;
  if (!proxy) return;
  const wanted = unlocked && Date.now() >= proxyDeclinedUntil && (await passkeysEnabled());
  try {
    if (wanted && !proxyAttached) {
      const refused = await proxy.attach();
      proxyAttached = !refused;
    } else if (!wanted && proxyAttached) {
      proxyAttached = false;
      await proxy.detach();
    }
  } catch {
    proxyAttached = false;
  }
}

/** Completes the browser's call; the browser's refusal of an answer (a malformed response) is
 * returned as a failure for the chooser to show. */
async function completeCall(call, fields) {
  if (call.page) {
    // Firefox's page-world call: the answer goes back to the page through the relay.
    call.page(fields.responseJson ? { responseJson: JSON.parse(fields.responseJson) } : fields);
    return null;
  }
  const proxy = api.webAuthenticationProxy;
  try {
    if (call.kind === "create") await proxy.completeCreateRequest({ requestId: call.requestId, ...fields });
    else await proxy.completeGetRequest({ requestId: call.requestId, ...fields });
    return null;
  } catch (error) {
    return failure("failed", `The browser refused Keyhaven's answer: ${error && error.message ? error.message : error}`);
  }
}

function failCall(call, name, message) {
  return completeCall(call, { error: { name, message } });
}

/** Shows the chooser: Keyhaven's sheet in the calling frame (the page keeps the focus WebAuthn
 * needs). When no frame of an active tab with the caller's origin and focus shows it (a page loaded
 * before the extension), the call fails: an answer given from a window of Keyhaven's own is refused
 * by Chromium ("the page does not have focus"), so there is nothing else to open. */
async function openChooser(id) {
  const call = passkeyCalls.get(id);
  if (call.frameId !== undefined) {
    // A page-world call: the sheet goes to the very frame that called.
    await api.tabs.sendMessage(call.tabId, { kind: "passkey.show", request: id, origin: call.origin, direct: true }, { frameId: call.frameId });
    return;
  }
  for (const tab of await api.tabs.query({ active: true })) {
    // Set first: the sheet asks for the choices before this reply arrives.
    call.tabId = tab.id;
    try {
      const reply = await api.tabs.sendMessage(tab.id, { kind: "passkey.show", request: id, origin: call.origin });
      if (reply && reply.shown) return;
    } catch {
      // No content script in that tab.
    }
    delete call.tabId;
  }
  throw new Error("Keyhaven could not show its passkey sheet in this page: reload the page and try again.");
}

function onProxyRequest(kind, info) {
  let options;
  try {
    options = JSON.parse(info.requestDetailsJson);
  } catch {
    return failCall({ kind, requestId: info.requestId }, "NotAllowedError", "Keyhaven could not read the request.");
  }
  const origin = options.extensions?.remoteDesktopClientOverride?.origin;
  if (options.extensions) {
    delete options.extensions.remoteDesktopClientOverride;
    if (Object.keys(options.extensions).length === 0) delete options.extensions;
  }
  if (!origin) return failCall({ kind, requestId: info.requestId }, "NotAllowedError", "The browser gave no origin.");
  const id = crypto.randomUUID();
  passkeyCalls.set(id, { kind, requestId: info.requestId, options, origin });
  openChooser(id).catch((error) => {
    passkeyCalls.delete(id);
    failCall({ kind, requestId: info.requestId }, "NotAllowedError", error && error.message ? error.message : "Keyhaven could not ask you.");
  });
}

function closeChooser(call, id) {
  if (call.tabId !== undefined) api.tabs.sendMessage(call.tabId, { kind: "passkey.close", request: id }).catch(() => {});
}

if (api.webAuthenticationProxy) {
  const proxy = api.webAuthenticationProxy;
  proxy.onCreateRequest.addListener((info) => onProxyRequest("create", info));
  proxy.onGetRequest.addListener((info) => onProxyRequest("get", info));
  // Keyhaven verifies the person with its unlock: a user-verifying platform authenticator.
  proxy.onIsUvpaaRequest.addListener((info) => proxy.completeIsUvpaaRequest({ requestId: info.requestId, isUvpaa: true }));
  proxy.onRequestCanceled.addListener((requestId) => {
    for (const [id, call] of passkeyCalls) {
      if (call.requestId !== requestId) continue;
      passkeyCalls.delete(id);
      closeChooser(call, id);
    }
  });
}

// The popup's "Keep and use passkeys in Keyhaven" switch.
api.storage.onChanged.addListener((changes, area) => {
  if (area === "local" && changes.passkeys) status().then((state) => syncPasskeyProxy(state.state === "unlocked"));
});

/** The chooser's questions: what to show, then the person's answer. */
async function handlePasskeyMessage(message, sender) {
  if (message.kind === "passkey.signal") {
    const origin = sender.origin ?? new URL(sender.url).origin;
    const signal = message.signal ?? {};
    return request({ ...signal, type: "passkey.signal", origin });
  }
  if (message.kind === "passkey.conditional.choices" || message.kind === "passkey.conditional.assert") {
    // A page's conditional get, answered from Keyhaven's AutoFill menu in that frame.
    if (!sender.tab || !(await passkeysEnabled())) throw failure("userCanceled", "Passkeys are off in Keyhaven.");
    const origin = sender.origin ?? new URL(sender.url).origin;
    if (message.kind === "passkey.conditional.choices") {
      return request({ type: "passkey.choices", kind: "get", options: message.options, origin });
    }
    return request({ type: "passkey.assert", options: message.options, origin, credentialId: String(message.credentialId ?? "") });
  }
  if (message.kind === "passkey.conditionalCreate") {
    // Silent, so only when the person allowed it, right after Keyhaven filled this account's
    // password in this very tab and origin; otherwise the browser's own conditional create runs.
    const options = message.options ?? {};
    const origin = sender.origin ?? (sender.url ? new URL(sender.url).origin : "");
    const fill = sender.tab && recentFills.get(sender.tab.id);
    const fresh = fill && fill.origin === origin && Date.now() - fill.at < CONDITIONAL_CREATE_WINDOW;
    if (!fresh || fill.user !== options.user?.name || !agentUnlocked || !(await passkeysEnabled()) || !(await conditionalCreateEnabled())) {
      return { fallback: true };
    }
    try {
      const made = await request({ type: "passkey.register", options, origin, confirmed: true });
      recentFills.delete(sender.tab.id);
      return { responseJson: made.responseJson };
    } catch (error) {
      // Already upgraded (excluded), or anything else: the browser's own handles it.
      return { fallback: true };
    }
  }
  if (message.kind === "passkey.page") {
    // Firefox (no proxy): the page world's create()/get(). Not Keyhaven's to answer → the browser's.
    const kind = message.call && message.call.kind;
    if (api.webAuthenticationProxy || !agentUnlocked || !(await passkeysEnabled()) || !sender.tab) return { fallback: true };
    if ((kind !== "create" && kind !== "get") || !message.call.options) return { fallback: true };
    const origin = sender.origin ?? new URL(sender.url).origin;
    const id = crypto.randomUUID();
    return new Promise((resolve) => {
      passkeyCalls.set(id, { kind, options: message.call.options, origin, tabId: sender.tab.id, frameId: sender.frameId ?? 0, page: resolve });
      openChooser(id).catch(() => {
        passkeyCalls.delete(id);
        resolve({ fallback: true });
      });
    });
  }
  if (message.kind === "passkey.verified") {
    if (!sender.url || !sender.url.startsWith(api.runtime.getURL("unlock.html"))) {
      throw failure("badRequest", "Only Keyhaven's unlock page verifies.");
    }
    return verifyForPasskey(message, sender);
  }
  const call = passkeyCalls.get(message.request);
  if (!call) throw failure("credentialIdentityNotFound", "This passkey request is over.");
  // Only Keyhaven's sheet in the calling frame of the calling tab (its origin as the browser
  // reports it) answers a call.
  const fromSheet = sender.tab && sender.tab.id === call.tabId && (sender.origin ?? new URL(sender.url).origin) === call.origin;
  if (!fromSheet) throw failure("badRequest", "Only Keyhaven's sheet in the calling page answers passkey calls.");
  if (message.kind === "passkey.verify") {
    // The master password is never typed into a page: the extension's own page asks for it.
    pendingVerify = { request: message.request, tabId: sender.tab ? sender.tab.id : null, frameId: sender.frameId ?? 0 };
    await api.tabs.create({ url: api.runtime.getURL("unlock.html?verify=1") });
    return {};
  }
  if (message.kind === "passkey.pending") {
    const choices = await request({ type: "passkey.choices", kind: call.kind, options: call.options, origin: call.origin });
    return { kind: call.kind, ...choices };
  }
  // passkey.answer
  if (message.decline) {
    passkeyCalls.delete(message.request);
    if (call.page && message.decline === "other") {
      // The page world runs the browser's own create()/get() with the same options.
      call.page({ fallback: true });
      closeChooser(call, message.request);
      return {};
    }
    await failCall(call, "NotAllowedError", "The person chose not to use Keyhaven.");
    if (message.decline === "other") {
      // The browser's own authenticators take the next try: stand aside for two minutes.
      proxyDeclinedUntil = Date.now() + 120000;
      await syncPasskeyProxy(agentUnlocked);
      setTimeout(() => status().then((state) => syncPasskeyProxy(state.state === "unlocked")), 120500);
    }
    closeChooser(call, message.request);
    return {};
  }
  let answer;
  try {
    answer =
      call.kind === "create"
        ? await request({ type: "passkey.register", options: call.options, origin: call.origin, confirmed: !!message.confirmed, masterPassword: message.masterPassword })
        : await request({ type: "passkey.assert", options: call.options, origin: call.origin, credentialId: String(message.credentialId ?? ""), masterPassword: message.masterPassword });
  } catch (error) {
    // The person can type the master password and try again; anything else ends the call.
    if (error.code !== "userVerificationRequired" && error.code !== "wrongPassword") {
      passkeyCalls.delete(message.request);
      await failCall(call, DOM_ERRORS[error.code] ?? "NotAllowedError", error.localizedFailureReason ?? "Keyhaven refused.");
    }
    throw error;
  }
  passkeyCalls.delete(message.request);
  const refused = await completeCall(call, { responseJson: JSON.stringify(answer.responseJson) });
  if (refused) {
    await failCall(call, "NotAllowedError", "Keyhaven's answer was refused.");
    throw refused;
  }
  closeChooser(call, message.request);
  return {};
}

let pendingVerify = null;

/** The unlock page in its verify mode: the agent renews its user verification, and the sheet that
 * asked shows its choices again without the request for it. */
async function verifyForPasskey(message, sender) {
  await request({ type: "verify", masterPassword: String(message.masterPassword ?? "") });
  const pending = pendingVerify;
  pendingVerify = null;
  if (pending && pending.tabId !== null) {
    const call = passkeyCalls.get(pending.request);
    if (call) api.tabs.sendMessage(pending.tabId, { kind: "passkey.show", request: pending.request, origin: call.origin }, { frameId: pending.frameId }).catch(() => {});
    api.tabs.update(pending.tabId, { active: true }).catch(() => {});
  }
  if (sender && sender.tab) api.tabs.remove(sender.tab.id).catch(() => {});
  return { verified: true };
}
