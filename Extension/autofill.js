// Keyhaven AutoFill's in-page UI (part of the background; docs/autofill-protocol.md §2.6). Each
// document that has fields gets one extension-origin frame (ui.html, placed by content.js); the
// background decides what it shows — a *session*: the menu for a field, the passkey sheet for a
// WebAuthn call, the save prompt — and runs the row the person chose there. Secrets leave for a
// page only here, and only after such a choice:
// - a choice comes from the frame's port (ui.js: a trusted click or key, after its 400 ms delay),
//   never from a content script, and is acted on only if content.js confirms the frame is still
//   shown as placed (not removed, faded, resized or put under something in the top layer);
// - "Other passwords…" opens the chooser (chooser.html), an extension page of its own: a credential
//   saved for another site is filled only after the person confirms it there;
// - the save prompt appears only after a submit content.js saw the person make, for a password
//   they typed (or Keyhaven generated), and at most a few times per site.
"use strict";

const ROW_HEIGHT = 40;
const FRAME_CHROME = 10; // ui.css: 1 px border and 4 px padding, top and bottom
const MENU_WIDTH = 320;
const SHEET_WIDTH = 340;
const SAVE_PROMPTS_PER_SITE = 5;
const SAVE_PROMPT_WINDOW = 10 * 60 * 1000;

const uiFrames = new Map(); // frameToken -> {tabId, frameId, port, session}
const uiSessions = new Map(); // token -> session
const pendingSaves = new Map(); // tabId -> {url, user, password, at}
const savePrompts = new Map(); // origin -> [times]

function randomToken() {
  return C.b64url(crypto.getRandomValues(new Uint8Array(24)));
}

// --- frames ---

function preloadFrame(sender) {
  const frameToken = randomToken();
  uiFrames.set(frameToken, { tabId: sender.tab.id, frameId: sender.frameId ?? 0, port: null, session: null });
  return { frameToken, url: api.runtime.getURL("ui.html") + "#" + frameToken };
}

/** The frame `frameToken` of the content script that is asking (its own tab and frame only). */
function frameOf(frameToken, sender) {
  const frame = uiFrames.get(frameToken);
  if (!frame || frame.tabId !== sender.tab.id || frame.frameId !== (sender.frameId ?? 0)) {
    throw failure("badRequest", "Unknown Keyhaven frame.");
  }
  return frame;
}

function forgetFrame(frameToken, sender) {
  const frame = uiFrames.get(frameToken);
  if (frame && frame.tabId === sender.tab.id) {
    if (frame.session) endSession(frame.session, { hide: false });
    if (frame.port) frame.port.disconnect();
    uiFrames.delete(frameToken);
  }
  return {};
}

function attachFrame(port) {
  let frame = null;
  port.onMessage.addListener((message) => {
    if (message.type === "hello" && !frame) {
      const candidate = uiFrames.get(String(message.frameToken ?? ""));
      // The frame must sit in the tab the token was made for.
      if (!candidate || candidate.port || !port.sender.tab || port.sender.tab.id !== candidate.tabId) {
        port.disconnect();
        return;
      }
      frame = candidate;
      frame.port = port;
      if (frame.session) pushView(frame.session);
      return;
    }
    if (!frame || !frame.session || message.token !== frame.session.token) return;
    if (message.type === "choose") choose(frame.session, Number(message.index));
    else if (message.type === "dismiss") endSession(frame.session, { refocus: true });
  });
  port.onDisconnect.addListener(() => {
    // The document that held the frame is gone (or the page removed the frame): so is its session.
    if (!frame || frame.port !== port) return;
    frame.port = null;
    if (frame.session) endSession(frame.session, { hide: false });
    for (const [frameToken, known] of uiFrames) if (known === frame) uiFrames.delete(frameToken);
  });
}

// --- sessions ---

function sizeOf(session) {
  return { width: session.width, height: FRAME_CHROME + ROW_HEIGHT * session.rows.length };
}

function view(session) {
  return {
    token: session.token,
    kind: session.kind,
    label: session.label,
    rows: session.rows.map((row) => ({
      text: row.text, detail: row.detail, action: !!row.action, primary: !!row.primary, title: !!row.title, status: !!row.status,
    })),
  };
}

function pushView(session) {
  const frame = uiFrames.get(session.frameToken);
  if (frame && frame.port && frame.session === session) frame.port.postMessage({ type: "view", view: view(session) });
}

function newSession(kind, frameToken, fields) {
  const frame = uiFrames.get(frameToken);
  if (frame.session) endSession(frame.session, { hide: false });
  const session = {
    token: randomToken(), kind, frameToken, tabId: frame.tabId, frameId: frame.frameId,
    width: kind === "menu" ? MENU_WIDTH : SHEET_WIDTH, label: "Keyhaven", rows: [], busy: false, ...fields,
  };
  frame.session = session;
  uiSessions.set(session.token, session);
  return session;
}

/** New rows for a session that shows: the frame re-renders (its click delay starts again) and
 *  content.js resizes it. */
function update(session, rows) {
  if (!uiSessions.has(session.token)) return;
  session.rows = rows;
  pushView(session);
  const { width, height } = sizeOf(session);
  api.tabs.sendMessage(session.tabId, { kind: "ui.resize", token: session.token, width, height }, { frameId: session.frameId }).catch(() => {});
}

function endSession(session, { hide = true, refocus = false } = {}) {
  if (!uiSessions.delete(session.token)) return;
  const frame = uiFrames.get(session.frameToken);
  if (frame && frame.session === session) {
    frame.session = null;
    if (frame.port) frame.port.postMessage({ type: "clear" });
  }
  if (hide) {
    api.tabs.sendMessage(session.tabId, { kind: "ui.hide", token: session.token, refocus }, { frameId: session.frameId }).catch(() => {});
  }
  if (session.onEnd) session.onEnd();
}

function closedByPage(token, sender) {
  const session = uiSessions.get(token);
  if (session && session.tabId === sender.tab.id && session.frameId === (sender.frameId ?? 0)) endSession(session, { hide: false });
  return {};
}

function focusFrame(token, sender) {
  const session = uiSessions.get(token);
  const frame = session && uiFrames.get(session.frameToken);
  if (frame && frame.port && session.tabId === sender.tab.id) frame.port.postMessage({ type: "focus" });
  return {};
}

/** Asks content.js whether the frame is still shown as placed before acting on a choice in it. */
async function stillShown(session) {
  try {
    const answer = await api.tabs.sendMessage(session.tabId, { kind: "ui.visible", token: session.token }, { frameId: session.frameId });
    return !!(answer && answer.visible);
  } catch {
    return false;
  }
}

async function choose(session, index) {
  const row = session.rows[index];
  if (!row || !row.action || session.busy) return;
  session.busy = true;
  try {
    if (!(await stillShown(session))) {
      // Covered, faded or moved by the page, or re-raised just now: shown again, choose again.
      pushView(session);
      return;
    }
    await row.action();
  } catch (error) {
    update(session, [{ text: (error && error.localizedFailureReason) || "Keyhaven could not do that.", status: true }, cancelRow(session)]);
  } finally {
    session.busy = false;
  }
}

function cancelRow(session, text = "Cancel") {
  return { text, action: () => endSession(session, { refocus: true }) };
}

function note(text) {
  return { text, status: true };
}

/** Sends what the person chose to the frame of the menu, for its field. */
async function deliver(session, payload) {
  await api.tabs.sendMessage(
    session.tabId,
    { kind: "ui.fill", frameToken: session.frameToken, ...payload },
    { frameId: session.frameId }
  );
}

// --- the AutoFill menu ---

function trustworthyFrame(url) {
  try {
    const parsed = new URL(url);
    const host = parsed.hostname;
    return parsed.protocol === "https:" || host === "127.0.0.1" || host === "[::1]" || host === "localhost" || host.endsWith(".localhost");
  } catch {
    return false;
  }
}

async function query(url, topURL, kinds) {
  const key = url + "\n" + topURL + "\n" + kinds.join(",");
  if (!cache.has(key)) cache.set(key, request({ type: "identities.query", url, topURL, kinds }));
  try {
    return await cache.get(key);
  } catch (error) {
    cache.delete(key);
    throw error;
  }
}

async function openMenu(message, sender) {
  const frame = frameOf(String(message.frameToken ?? ""), sender);
  const { url, topURL } = frameURLs(sender);
  const field = message.field ?? {};
  const kind = ["username", "password", "new-password", "otp"].includes(field.kind) ? field.kind : null;
  if (!kind) return { token: null };
  // A passkey sheet showing in this frame stays until the person answers it.
  if (frame.session && frame.session.kind === "sheet") return { token: null };
  const session = newSession("menu", message.frameToken, { url, topURL, label: "Keyhaven AutoFill" });
  const rows = [];
  if (kind === "new-password") {
    const rules = typeof field.passwordRules === "string" ? field.passwordRules : "";
    rows.push({ text: "Use strong password", detail: "Generated by Keyhaven", action: () => fillGenerated(session, rules) });
  }
  if (message.conditional && typeof message.conditional.id === "string") {
    rows.push(...(await passkeyRows(session, message.conditional, message.ancestry ?? {}, sender)));
  }
  let answered = false;
  try {
    const answer = await query(url, topURL, kind === "otp" ? ["oneTimeCode"] : ["password"]);
    answered = true;
    for (const identity of answer.identities) {
      rows.push({
        text: identity.user || "(no user name)",
        detail: identity.kind === "oneTimeCode" ? `one-time code · ${identity.serviceIdentifier}` : identity.serviceIdentifier,
        action: () => fill(session, identity, false),
      });
    }
  } catch (error) {
    if (kind !== "new-password") {
      rows.push(
        note(
          error.code === "locked"
            ? "Keyhaven is locked: unlock it in the tab that opened."
            : error.code === "notPaired"
              ? "Pair this browser: click the Keyhaven icon."
              : error.localizedFailureReason || "Keyhaven is not available."
        )
      );
      if (error.code === "locked") openUnlock(sender, { tabId: session.tabId, frameId: session.frameId, frameToken: session.frameToken }).catch(() => {});
    }
  }
  if ((kind === "username" || kind === "password") && answered && trustworthyFrame(url) && (sender.frameId ?? 0) === 0) {
    rows.push({ text: "Other passwords…", action: () => otherPasswords(session) });
  } else if ((kind === "username" || kind === "password") && answered && trustworthyFrame(url)) {
    // A frame: "Other passwords…" only when it is same-origin with its top page.
    try {
      if (new URL(url).origin === new URL(topURL).origin) rows.push({ text: "Other passwords…", action: () => otherPasswords(session) });
    } catch {
      // no top URL
    }
  }
  if (rows.length === 0) {
    endSession(session, { hide: false });
    return { token: null };
  }
  session.rows = rows;
  pushView(session);
  return { token: session.token, ...sizeOf(session) };
}

async function fill(session, identity, confirmed, fromCredentialList = false) {
  // deliver() reaches the frame's content script, which fills only for its own frame token: a
  // document that replaced the menu's (a navigation) has another one and ignores it.
  const { url, topURL } = session;
  try {
    if (identity.kind === "oneTimeCode") {
      const answer = await request({ type: "oneTimeCode.provide", recordIdentifier: identity.recordIdentifier, url, topURL, confirmed });
      await deliver(session, { code: answer.code });
    } else {
      const filled = await request({
        type: confirmed ? "credential.prepareInterface" : "credential.provideWithoutUserInteraction",
        recordIdentifier: identity.recordIdentifier, url, topURL, confirmed, fromCredentialList, deadlineMs: 2000,
      });
      await deliver(session, { credential: filled.credential });
      notePasswordFill(session, filled.credential.user);
    }
    endSession(session, { hide: false });
  } catch (error) {
    if (error.code === "userInteractionRequired" && !confirmed) {
      // Not silently: the person confirms here, in Keyhaven's own frame.
      update(session, [
        note(error.localizedFailureReason),
        { text: `Fill ${identity.user || "it"} from ${identity.serviceIdentifier}?`, primary: true, action: () => fill(session, identity, true, fromCredentialList) },
        cancelRow(session),
      ]);
    } else if (error.code === "locked") {
      update(session, [note("Keyhaven is locked: unlock it in the tab that opened."), cancelRow(session, "Close")]);
      await openUnlock({ tab: { id: session.tabId } }, { tabId: session.tabId, frameId: session.frameId, frameToken: session.frameToken });
    } else {
      update(session, [note(error.localizedFailureReason || "Keyhaven could not fill this field."), cancelRow(session, "Close")]);
    }
  }
}

async function fillGenerated(session, rules) {
  const answer = await request({ type: "password.generate", url: session.url, passwordRules: rules || undefined });
  await deliver(session, { generated: answer.password });
  endSession(session, { hide: false });
}

// --- "Other passwords…": a page of Keyhaven's own ---

const choosers = new Map(); // token -> {menu session fields, identities, tabId of the chooser}

async function otherPasswords(session) {
  const token = randomToken();
  const chooser = { token, target: session, identities: null, chooserTab: null };
  choosers.set(token, chooser);
  update(session, [note("Choose the password in Keyhaven's window."), cancelRow(session, "Close")]);
  session.onEnd = () => choosers.delete(token);
  const tab = await api.tabs.create({ url: api.runtime.getURL("chooser.html") + "#" + token });
  chooser.chooserTab = tab && tab.id;
}

async function chooserContents(message) {
  const chooser = choosers.get(String(message.token ?? ""));
  if (!chooser || !uiSessions.has(chooser.target.token)) throw failure("credentialIdentityNotFound", "This choice is over: ask again from the page.");
  const { url, topURL } = chooser.target;
  const answer = await request({ type: "credentialList", url, topURL });
  chooser.identities = answer.identities;
  return {
    host: new URL(url).host,
    identities: answer.identities.map((identity, index) => ({
      index, user: identity.user, serviceIdentifier: identity.serviceIdentifier, match: !!identity.match,
    })),
  };
}

async function chooserFill(message, sender) {
  const chooser = choosers.get(String(message.token ?? ""));
  if (!chooser || !chooser.identities || !uiSessions.has(chooser.target.token)) {
    throw failure("credentialIdentityNotFound", "This choice is over: ask again from the page.");
  }
  const identity = chooser.identities[Number(message.index)];
  if (!identity) throw failure("badRequest", "No such password.");
  const session = chooser.target;
  // Confirmed here, in a page the site cannot script; a match for this page fills as usual.
  const { url, topURL } = session;
  const filled = await request({
    type: "credential.prepareInterface", recordIdentifier: identity.recordIdentifier, url, topURL,
    confirmed: true, fromCredentialList: !identity.match, deadlineMs: 2000,
  });
  await deliver(session, { credential: filled.credential });
  endSession(session, { hide: false });
  choosers.delete(chooser.token);
  api.tabs.update(session.tabId, { active: true }).catch(() => {});
  if (sender.tab) api.tabs.remove(sender.tab.id).catch(() => {});
  return { filled: true };
}

// --- saving after a submit ---

function noteSubmitted(message, sender) {
  if (typeof message.password !== "string" || !message.password) return {};
  pendingSaves.set(sender.tab.id, {
    url: sender.url, user: typeof message.user === "string" ? message.user : "", password: message.password, at: Date.now(),
  });
  return {};
}

/** What the prompt would offer for the tab's last submit: "save", "update", or null (nothing new,
 *  too old, or this site asked too often). */
async function saveAction(tabId) {
  const pending = pendingSaves.get(tabId);
  if (!pending || Date.now() - pending.at > 60000) return null;
  const origin = new URL(pending.url).origin;
  const recent = (savePrompts.get(origin) ?? []).filter((at) => Date.now() - at < SAVE_PROMPT_WINDOW);
  savePrompts.set(origin, recent);
  if (recent.length >= SAVE_PROMPTS_PER_SITE) {
    pendingSaves.delete(tabId);
    return null;
  }
  const identities = await request({ type: "identities.query", url: pending.url, kinds: ["password"] });
  const same = identities.identities.find((identity) => identity.user === pending.user && identity.match === "exact");
  if (!same) return "save";
  try {
    const current = await request({
      type: "credential.provideWithoutUserInteraction", recordIdentifier: same.recordIdentifier, url: pending.url, topURL: pending.url,
    });
    if (current.credential.password === pending.password) {
      pendingSaves.delete(tabId);
      return null;
    }
  } catch {
    // Not silently readable here (a plain-http page): offer the update.
  }
  return "update";
}

async function offerSave(message, sender) {
  if ((sender.frameId ?? 0) !== 0) return { due: false };
  const action = await saveAction(sender.tab.id);
  if (!action) return { due: false };
  if (!message.frameToken) return { due: true };
  const frame = frameOf(String(message.frameToken), sender);
  // A passkey sheet showing here stays; the prompt can come with the next page.
  if (frame.session && frame.session.kind === "sheet") return { due: false };
  const pending = pendingSaves.get(sender.tab.id);
  const origin = new URL(pending.url).origin;
  savePrompts.get(origin).push(Date.now());
  const host = new URL(pending.url).host;
  const who = pending.user || "this account";
  const session = newSession("prompt", message.frameToken, { label: "Keyhaven: save password" });
  session.rows = [
    note(action === "update" ? `Update the password of ${who} on ${host} in Keyhaven?` : `Save the password of ${who} on ${host} in Keyhaven?`),
    { text: action === "update" ? "Update" : "Save", primary: true, action: () => save(session, pending) },
    {
      text: "Not now",
      action: () => {
        pendingSaves.delete(session.tabId);
        endSession(session);
      },
    },
  ];
  pushView(session);
  return { token: session.token, ...sizeOf(session) };
}

async function save(session, pending) {
  if (pendingSaves.get(session.tabId) !== pending) throw failure("failed", "Nothing to save.");
  pendingSaves.delete(session.tabId);
  cache.clear();
  const saved = await request({ type: "credential.save", url: pending.url, user: pending.user, password: pending.password });
  update(session, [note(saved.action === "updated" ? "Updated in Keyhaven." : saved.action === "unchanged" ? "Already in Keyhaven." : "Saved in Keyhaven.")]);
  setTimeout(() => endSession(session), 1500);
}

// A tab that closes or navigates its top frame leaves its sessions behind.
api.tabs.onRemoved.addListener((tabId) => {
  pendingSaves.delete(tabId);
  for (const [frameToken, frame] of uiFrames) {
    if (frame.tabId !== tabId) continue;
    if (frame.session) endSession(frame.session, { hide: false });
    uiFrames.delete(frameToken);
  }
});
