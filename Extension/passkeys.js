// Keyhaven as the browser's passkey authenticator (part of the background; docs/autofill-protocol.md
// §2.5). Chromium: `chrome.webAuthenticationProxy` hands every WebAuthn create()/get() of every
// page to this extension while it is attached — only while the agent is unlocked and passkeys are
// on, so a locked Keyhaven never stands between a site and a security key. The browser itself
// checks the rpId, the Permissions Policy of frames and reports the caller's origin
// (requestDetailsJson's remoteDesktopClientOverride); the page never claims it. Firefox (no proxy):
// the page-world wrapper (page-passkeys.js) asks through relay.js, and this file applies what the
// browser would: a cross-origin frame without `allow="publickey-credentials-…"` goes to the
// browser's own authenticator (which refuses it).
//
// Each call shows Keyhaven's sheet — a session of the in-page frame (autofill.js) — in the calling
// frame. User presence (UP) is a real click in that frame or in the AutoFill menu's passkey rows
// (conditional get); the silent conditional create is the only UP=0 credential. A call Keyhaven does
// not serve (an RP ID the agent refuses, no frame to ask in) ends at once: it never stays pending.
"use strict";

const passkeyCalls = new Map(); // call id -> {kind, requestId, options, origin, crossOrigin, tabId, frameId, page, choices, session, timer}
let proxyAttached = false;
let proxyDeclinedUntil = 0;
// Whether the agent was unlocked when last heard (Firefox's page-world calls ask before using it).
let agentUnlocked = false;

const DOM_ERRORS = {
  matchedExcludedCredential: "InvalidStateError",
  originNotAllowed: "SecurityError",
  badRequest: "NotAllowedError",
};
// A sheet nobody answers ends with NotAllowedError after the page's timeout (WebAuthn's default
// when none is given), within these bounds.
const CALL_TIMEOUT_DEFAULT = 300000;
const CALL_TIMEOUT_MIN = 15000;
const CALL_TIMEOUT_MAX = 600000;

// Conditional create: the last password Keyhaven filled in each tab (origin, user, when). A site's
// `create({mediation: "conditional"})` for that account within five minutes makes a passkey without
// asking — only when the person turned "Upgrade to passkeys after a password fill" on.
const recentFills = new Map();
const CONDITIONAL_CREATE_WINDOW = 5 * 60 * 1000;

function notePasswordFill(session, user) {
  let origin = "";
  try {
    origin = new URL(session.url).origin;
  } catch {
    return;
  }
  recentFills.set(session.tabId, { origin, frameId: session.frameId, user, at: Date.now() });
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

function originOf(url) {
  try {
    return new URL(url).origin;
  } catch {
    return "";
  }
}

/** The caller fields every passkey request to the agent carries: the browser-given origin and, for
 *  a frame cross-origin with an ancestor, the top-level origin (clientData's crossOrigin/topOrigin). */
function callerFields(call) {
  return call.crossOrigin ? { origin: call.origin, crossOrigin: true, topOrigin: call.topOrigin } : { origin: call.origin };
}

/** Completes the browser's call; the browser's refusal of an answer (a malformed response) is
 * returned as a failure for the sheet to show. */
async function completeCall(call, fields) {
  if (call.timer) clearTimeout(call.timer);
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

/** Ends call `id` with a DOMException named `name` (or, for Firefox's page calls, hands it to the
 *  browser's own authenticator when `fallback`), closing its sheet. */
async function endCall(id, name, message, { fallback = false } = {}) {
  const call = passkeyCalls.get(id);
  if (!call) return;
  passkeyCalls.delete(id);
  if (call.session) endSession(call.session);
  if (call.page && fallback) {
    if (call.timer) clearTimeout(call.timer);
    call.page({ fallback: true });
    return;
  }
  await failCall(call, name, message);
}

/** Asks the agent what the sheet will show and, meanwhile, finds the calling frame; the sheet
 *  shows only once the agent answered: a call the agent refuses (an RP ID it does not serve, a
 *  locked vault) ends at once and shows nothing. When no frame of an active tab with the caller's
 *  origin can show the sheet (a page loaded before the extension), the call fails: an answer given
 *  from a window of Keyhaven's own is refused by Chromium ("the page does not have focus"). */
async function openChooser(id) {
  const call = passkeyCalls.get(id);
  call.choices = request({ type: "passkey.choices", kind: call.kind, options: call.options, ...callerFields(call) });
  call.choices.catch((error) =>
    endCall(id, DOM_ERRORS[error.code] ?? "NotAllowedError", error.localizedFailureReason ?? "Keyhaven does not serve this call.", {
      fallback: true,
    })
  );
  const timeout = Math.min(CALL_TIMEOUT_MAX, Math.max(CALL_TIMEOUT_MIN, Number(call.options.timeout) || CALL_TIMEOUT_DEFAULT));
  call.timer = setTimeout(() => endCall(id, "NotAllowedError", "The passkey request timed out."), timeout);
  if (call.frameId !== undefined) {
    // A page-world call: the sheet goes to the very frame that called.
    const reply = await api.tabs
      .sendMessage(call.tabId, { kind: "passkey.show", request: id, origin: call.origin, direct: true }, { frameId: call.frameId })
      .catch(() => null);
    if (!passkeyCalls.has(id)) return; // refused by the agent meanwhile
    if (!reply || !reply.shown) throw new Error("Keyhaven could not show its passkey sheet in this page: reload the page and try again.");
    return;
  }
  // The proxy names no frame: first the frame of the caller's origin that has the focus, then (a
  // frame the person has not clicked into yet) any frame of that origin in an active tab.
  for (const focused of [true, false]) {
    for (const tab of await api.tabs.query({ active: true })) {
      if (!passkeyCalls.has(id)) return;
      try {
        const reply = await api.tabs.sendMessage(tab.id, { kind: "passkey.show", request: id, origin: call.origin, focused });
        if (reply && reply.shown) return;
      } catch {
        // No content script in that tab, or no frame of that origin.
      }
    }
  }
  if (!passkeyCalls.has(id)) return;
  throw new Error("Keyhaven could not show its passkey sheet in this page: reload the page and try again.");
}

function startCall(id, call) {
  call.id = id;
  passkeyCalls.set(id, call);
  openChooser(id).catch((error) =>
    endCall(id, "NotAllowedError", error && error.message ? error.message : "Keyhaven could not ask you.", { fallback: true })
  );
}

function onProxyRequest(kind, info) {
  let options;
  try {
    options = JSON.parse(info.requestDetailsJson);
  } catch {
    return failCall({ kind, requestId: info.requestId }, "NotAllowedError", "Keyhaven could not read the request.");
  }
  const override = options.extensions?.remoteDesktopClientOverride;
  const origin = override?.origin;
  if (options.extensions) {
    delete options.extensions.remoteDesktopClientOverride;
    if (Object.keys(options.extensions).length === 0) delete options.extensions;
  }
  if (!origin) return failCall({ kind, requestId: info.requestId }, "NotAllowedError", "The browser gave no origin.");
  // The browser says whether the caller is same-origin with all its ancestors; the top origin comes
  // from the tab whose frame shows the sheet.
  const crossOrigin = override.sameOriginWithAncestors === false;
  startCall(crypto.randomUUID(), { kind, requestId: info.requestId, options, origin, crossOrigin });
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
      if (call.timer) clearTimeout(call.timer);
      if (call.session) endSession(call.session);
    }
  });
}

// The popup's "Keep and use passkeys in Keyhaven" switch.
api.storage.onChanged.addListener((changes, area) => {
  if (area === "local" && changes.passkeys) status().then((state) => syncPasskeyProxy(state.state === "unlocked"));
});

// --- frames and the Permissions Policy (what the browser applies to its own calls) ---

const POLICY_FEATURE = { create: "publickey-credentials-create", get: "publickey-credentials-get" };

/** Whether an iframe's `allow` attribute lets `childOrigin` use `feature`: null when the attribute
 *  does not name the feature (the default allowlist applies), else true or false. */
function allowAttributeAllows(allow, feature, childOrigin, parentOrigin, src) {
  for (const directive of String(allow).split(";")) {
    const [name, ...values] = directive.trim().split(/\s+/);
    if (name !== feature) continue;
    const list = values.length ? values : ["'src'"];
    return list.some((value) => {
      if (value === "*") return true;
      if (value === "'none'") return false;
      if (value === "'self'") return childOrigin === parentOrigin;
      if (value === "'src'") return originOf(src) === childOrigin;
      return originOf(value) === childOrigin;
    });
  }
  return null;
}

/** Walks from the calling frame up to the top: at every cross-origin step the parent's iframe must
 *  allow the feature for the child's origin (the default allowlist of both features is 'self').
 *  A frame whose parent does not answer (no content script there) is refused. */
async function framePolicyAllows(tabId, frameId, origin, ancestry, kind) {
  if (ancestry.sameOriginWithAncestors || frameId === 0) return true;
  const feature = POLICY_FEATURE[kind];
  let childId = frameId;
  let childOrigin = origin;
  let parentId = ancestry.parentFrameId;
  for (let depth = 0; depth < 16; depth++) {
    if (typeof parentId !== "number") return false;
    const answer = await api.tabs.sendMessage(tabId, { kind: "passkey.frameAllows", frameId: childId }, { frameId: parentId }).catch(() => null);
    if (!answer || answer.allow === null || typeof answer.origin !== "string") return false;
    const declared = allowAttributeAllows(answer.allow, feature, childOrigin, answer.origin, answer.src);
    if (declared === false || (declared === null && childOrigin !== answer.origin)) return false;
    if (parentId === 0) return true;
    childId = parentId;
    childOrigin = answer.origin;
    parentId = answer.parentFrameId;
  }
  return false;
}

/** The caller of a content script's passkey message: its origin, and whether and under which top
 *  origin it is a cross-origin frame. */
function callerOf(sender, ancestry) {
  const origin = sender.origin ?? originOf(sender.url);
  const topOrigin = originOf(sender.tab && sender.tab.url);
  const crossOrigin = (sender.frameId ?? 0) !== 0 && (!ancestry || ancestry.sameOriginWithAncestors !== true || origin !== topOrigin);
  return { origin, crossOrigin, topOrigin };
}

// --- the sheet ---

function sheetRows(call, status) {
  const choices = call.choices;
  const rows = [];
  const id = call.id;
  if (call.kind === "create") {
    rows.push({ text: "Save a passkey?", title: true });
    rows.push(note(`For ${choices.user || "your account"} on ${choices.rpId}.`));
    if (choices.excluded) {
      // WebAuthn §6.3.2: the person acknowledges, then the site learns InvalidStateError.
      rows.push(note(`Keyhaven already has a passkey for this account on ${choices.rpId}.`));
      rows.push({ text: "OK", primary: true, action: () => endCall(id, "InvalidStateError", "This account already has a passkey in Keyhaven.") });
    } else {
      rows.push({ text: "Save passkey in Keyhaven", primary: true, action: () => answerCall(call, { confirmed: true }) });
    }
  } else {
    rows.push({ text: "Sign in with a passkey", title: true });
    rows.push(note(choices.passkeys.length ? `Choose an account for ${choices.rpId}.` : `Keyhaven has no passkey for ${choices.rpId}.`));
    for (const passkey of choices.passkeys) {
      rows.push({
        text: passkey.user || "(no user name)",
        detail: passkey.displayName && passkey.displayName !== passkey.user ? passkey.displayName : undefined,
        action: () => answerCall(call, { credentialId: passkey.credentialId }),
      });
    }
  }
  if (choices.verificationRequired) {
    rows.push(note("The site asks Keyhaven to verify it is you."));
    rows.push({ text: "Verify…", action: () => verifyRequest(call) });
  }
  rows.push({ text: "Use another device or security key", action: () => declineCall(call, "other") });
  rows.push({ text: "Cancel", action: () => declineCall(call, "cancel") });
  if (status) rows.push(note(status));
  return rows;
}

/** content.js in the calling frame asks for the sheet of call `request` in its Keyhaven frame. */
async function showPasskeySheet(message, sender) {
  const call = passkeyCalls.get(String(message.request ?? ""));
  if (!call || !call.choices) throw failure("credentialIdentityNotFound", "This passkey request is over.");
  const origin = sender.origin ?? originOf(sender.url);
  if (origin !== call.origin || (call.tabId !== undefined && call.tabId !== sender.tab.id)) {
    throw failure("badRequest", "Only the calling frame shows this passkey request.");
  }
  if (call.frameId !== undefined && call.frameId !== (sender.frameId ?? 0)) {
    throw failure("badRequest", "Only the calling frame shows this passkey request.");
  }
  frameOf(String(message.frameToken ?? ""), sender);
  if (call.session && uiSessions.has(call.session.token)) throw failure("badRequest", "This passkey request already shows.");
  // What to show: the agent's answer, asked for when the call came (a refusal ended the call).
  try {
    call.choices = await call.choices;
  } catch {
    throw failure("credentialIdentityNotFound", "This passkey request is over.");
  }
  if (passkeyCalls.get(String(message.request)) !== call) throw failure("credentialIdentityNotFound", "This passkey request is over.");
  if (call.session && uiSessions.has(call.session.token)) throw failure("badRequest", "This passkey request already shows.");
  call.tabId = sender.tab.id;
  call.frameId = sender.frameId ?? 0;
  if (call.crossOrigin) call.topOrigin = originOf(sender.tab.url);
  const session = newSession("sheet", message.frameToken, { label: "Keyhaven passkey", url: sender.url });
  session.onEnd = () => {
    if (call.session === session) call.session = null;
  };
  call.session = session;
  session.rows = sheetRows(call);
  pushView(session);
  return { token: session.token, ...sizeOf(session) };
}

async function declineCall(call, how) {
  const id = call.id;
  if (call.page && how === "other") {
    // The page world runs the browser's own create()/get() with the same options.
    return endCall(id, "NotAllowedError", "", { fallback: true });
  }
  await endCall(id, "NotAllowedError", "The person chose not to use Keyhaven.");
  if (how === "other" && !call.page) {
    // The browser's own authenticators take the next try: stand aside for two minutes.
    proxyDeclinedUntil = Date.now() + 120000;
    await syncPasskeyProxy(agentUnlocked);
    setTimeout(() => status().then((state) => syncPasskeyProxy(state.state === "unlocked")), 120500);
  }
}

/** The person chose in the sheet (a gesture: user presence): the agent makes or signs. */
async function answerCall(call, fields) {
  let answer;
  try {
    answer =
      call.kind === "create"
        ? await request({ type: "passkey.register", options: call.options, ...callerFields(call), confirmed: !!fields.confirmed, userPresent: true })
        : await request({
            type: "passkey.assert", options: call.options, ...callerFields(call), credentialId: String(fields.credentialId ?? ""), userPresent: true,
          });
  } catch (error) {
    if (error.code === "userVerificationRequired") {
      // The person verifies in Keyhaven's own page, then chooses again here.
      update(call.session, sheetRows(call, "Verify it is you first: choose Verify…"));
      return;
    }
    await endCall(call.id, DOM_ERRORS[error.code] ?? "NotAllowedError", error.localizedFailureReason ?? "Keyhaven refused.");
    return;
  }
  passkeyCalls.delete(call.id);
  if (call.session) endSession(call.session);
  const refused = await completeCall(call, { responseJson: JSON.stringify(answer.responseJson) });
  if (refused) await failCall(call, "NotAllowedError", "Keyhaven's answer was refused.");
}

let pendingVerify = null;

async function verifyRequest(call) {
  // The master password is never typed into a page: the extension's own page asks for it.
  pendingVerify = { request: call.id };
  update(call.session, sheetRows(call, "Verify in Keyhaven's window, then choose again here."));
  await api.tabs.create({ url: api.runtime.getURL("unlock.html?verify=1") });
}

/** The unlock page in its verify mode: the agent renews its user verification, and the sheet that
 *  asked shows its choices again without the request for it. */
async function verifyForPasskey(message, sender) {
  await request({ type: "verify", masterPassword: String(message.masterPassword ?? "") });
  const pending = pendingVerify;
  pendingVerify = null;
  const call = pending && passkeyCalls.get(pending.request);
  if (call && call.session) {
    try {
      call.choices = await request({ type: "passkey.choices", kind: call.kind, options: call.options, ...callerFields(call) });
    } catch {
      // keep the earlier choices
    }
    update(call.session, sheetRows(call));
    api.tabs.update(call.tabId, { active: true }).catch(() => {});
  }
  if (sender && sender.tab) api.tabs.remove(sender.tab.id).catch(() => {});
  return { verified: true };
}

// --- conditional get: passkeys in the AutoFill menu ---

/** The menu's passkey rows for the page's pending conditional get (content.js reports it with the
 *  frame's ancestry). Choosing one is a gesture in Keyhaven's frame: UP is set. */
async function passkeyRows(session, conditional, ancestry, sender) {
  if (!(await passkeysEnabled())) return [];
  const caller = callerOf(sender, ancestry);
  if (caller.crossOrigin && !(await framePolicyAllows(sender.tab.id, sender.frameId ?? 0, caller.origin, ancestry, "get"))) return [];
  const fields = caller.crossOrigin ? { origin: caller.origin, crossOrigin: true, topOrigin: caller.topOrigin } : { origin: caller.origin };
  let choices;
  try {
    choices = await request({ type: "passkey.choices", kind: "get", options: conditional.options, ...fields });
  } catch {
    return []; // locked, or not an RP ID Keyhaven serves: the password rows say what to do
  }
  return choices.passkeys.map((passkey) => ({
    text: passkey.user || "(no user name)",
    detail: `passkey · ${choices.rpId}`,
    action: async () => {
      const answer = await request({
        type: "passkey.assert", options: conditional.options, ...fields, credentialId: passkey.credentialId, userPresent: true,
      });
      await api.tabs.sendMessage(
        session.tabId,
        { kind: "passkey.reply", frameToken: session.frameToken, id: conditional.id, responseJson: answer.responseJson },
        { frameId: session.frameId }
      );
      endSession(session);
    },
  }));
}

// --- what the page world's wrapper reports (through relay.js) ---

const SIGNAL_FIELDS = {
  unknownCredential: ["rpId", "credentialId"],
  allAcceptedCredentials: ["rpId", "userId", "allAcceptedCredentialIds"],
  currentUserDetails: ["rpId", "userId", "name", "displayName"],
};

async function handlePasskeyMessage(message, sender) {
  if (message.kind === "passkey.signal") {
    // Only a signal's own fields, as strings (the list of ids as a list of strings): nothing the
    // page sends reaches the sealed request's other fields, and nothing of another type reaches the
    // agent (Extension/protocol.schema.json).
    const signal = message.signal ?? {};
    const names = SIGNAL_FIELDS[signal.kind];
    if (!names) throw failure("badRequest", "Unknown signal.");
    const fields = { kind: signal.kind };
    for (const name of names) {
      const value = signal[name];
      if (name === "allAcceptedCredentialIds") {
        if (Array.isArray(value)) fields[name] = value.filter((item) => typeof item === "string");
      } else if (typeof value === "string") {
        fields[name] = value;
      }
    }
    return request({ ...fields, type: "passkey.signal", origin: sender.origin ?? originOf(sender.url) });
  }
  if (message.kind === "passkey.conditionalCreate") {
    // Silent, so only when the person allowed it, right after Keyhaven filled this account's
    // password in this very tab, frame and origin, in a frame that is not cross-origin; otherwise
    // the browser's own conditional create runs. Nobody was asked: UP=0 (and no UV).
    const options = message.options ?? {};
    const caller = callerOf(sender, message.ancestry);
    const fill = recentFills.get(sender.tab.id);
    const fresh = fill && fill.origin === caller.origin && fill.frameId === (sender.frameId ?? 0) && Date.now() - fill.at < CONDITIONAL_CREATE_WINDOW;
    if (caller.crossOrigin || !fresh || fill.user !== options.user?.name || !agentUnlocked) return { fallback: true };
    if (!(await passkeysEnabled()) || !(await conditionalCreateEnabled())) return { fallback: true };
    try {
      const made = await request({ type: "passkey.register", options, origin: caller.origin, confirmed: true, userPresent: false });
      recentFills.delete(sender.tab.id);
      return { responseJson: made.responseJson };
    } catch {
      // Already upgraded (excluded), or anything else: the browser's own handles it.
      return { fallback: true };
    }
  }
  if (message.kind === "passkey.page") {
    // Firefox (no proxy): the page world's create()/get(). Not Keyhaven's to answer → the browser's.
    const kind = message.call && message.call.kind;
    if (api.webAuthenticationProxy || !agentUnlocked || !(await passkeysEnabled())) return { fallback: true };
    if ((kind !== "create" && kind !== "get") || !message.call.options) return { fallback: true };
    const caller = callerOf(sender, message.ancestry);
    // A cross-origin frame the embedder did not allow: the browser's own call, which refuses it.
    if (caller.crossOrigin && !(await framePolicyAllows(sender.tab.id, sender.frameId ?? 0, caller.origin, message.ancestry ?? {}, kind))) {
      return { fallback: true };
    }
    const id = crypto.randomUUID();
    return new Promise((resolve) => {
      startCall(id, {
        kind, options: message.call.options, origin: caller.origin, crossOrigin: caller.crossOrigin, topOrigin: caller.topOrigin,
        tabId: sender.tab.id, frameId: sender.frameId ?? 0, page: resolve,
      });
    });
  }
  throw failure("badRequest", "Unknown message.");
}
