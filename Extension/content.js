// Keyhaven AutoFill in the page (isolated world): recognises username, password, new-password and
// one-time-code fields (also in open shadow roots and in forms that appear late), and places
// Keyhaven's own UI next to them. That UI — the AutoFill menu, the passkey sheet, the save prompt —
// is `ui.html`, an extension-origin frame inside a closed shadow root in the top layer: the page can
// neither read what it shows (user names, sites) nor click it (events from a page never reach
// another origin's frame). This script never asks for a secret itself: the background runs what
// the person chose in that frame, and sends here only what to put into the field.
//
// What the page can still do, and what stops it:
// - focus a field by script: no menu until the person interacts (a real pointer press on the
//   field, a Tab into it, ArrowDown in it: `isTrusted` events only);
// - submit a form by script: the save prompt appears only for a password the person typed (or
//   Keyhaven generated) and a submit right after the person's own click or key;
// - cover, fade or move Keyhaven's frame: the frame ignores clicks in its first 400 ms and when
//   the browser reports it occluded, and before acting the background asks here whether the frame
//   is still shown as placed (`ui.visible`).
(() => {
  "use strict";
  if (window.__keyhavenContent) return;
  window.__keyhavenContent = true;

  const api = globalThis.browser ?? globalThis.chrome;
  const ask = globalThis.keyhavenAsk;
  const valueSetter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set;
  // A person's interaction counts for a focus that follows it within this time.
  const INTERACTION_MS = 1000;

  // --- fields ---

  function hints(input) {
    return [input.name, input.id, input.placeholder, input.getAttribute("aria-label")].join(" ").toLowerCase();
  }

  function scopeOf(input) {
    return input.form ?? input.getRootNode();
  }

  function inputsIn(scope) {
    return [...scope.querySelectorAll("input")];
  }

  function kindOf(element) {
    if (!(element instanceof HTMLInputElement) || element.disabled || element.readOnly) return null;
    const type = (element.getAttribute("type") || "text").toLowerCase();
    const autocomplete = (element.getAttribute("autocomplete") || "").toLowerCase();
    const hint = hints(element);
    if (autocomplete.includes("one-time-code")) return "otp";
    if (type === "password") return autocomplete.includes("new-password") ? "new-password" : "password";
    if (!["text", "email", "tel", "number"].includes(type)) return null;
    if (autocomplete.split(/\s+/).some((token) => token === "username" || token === "email")) return "username";
    if (element.maxLength === 1 && (element.inputMode === "numeric" || /code|otp|digit/.test(hint))) return "otp";
    if (/one.?time|otp|totp|2fa|verification.?code/.test(hint)) return "otp";
    if (type === "email" || /user|login|e-?mail|account|identifier/.test(hint)) return "username";
    const inputs = inputsIn(scopeOf(element));
    const after = inputs.slice(inputs.indexOf(element) + 1);
    return after.some((input) => input.type === "password") ? "username" : null;
  }

  // Values Keyhaven generated into new-password fields (they may be saved like typed ones).
  const generated = new WeakMap();
  // The value each field last had from the person's own typing (`isTrusted` input events).
  const typed = new WeakMap();

  function setValue(input, value) {
    input.focus();
    valueSetter.call(input, value);
    input.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
    input.dispatchEvent(new Event("change", { bubbles: true, composed: true }));
  }

  function fieldsOf(scope, kind) {
    return inputsIn(scope).filter((input) => kindOf(input) === kind);
  }

  function fillCredential(field, credential) {
    const scope = scopeOf(field);
    const kind = kindOf(field);
    const users = fieldsOf(scope, "username");
    const passwords = fieldsOf(scope, "password");
    if (kind === "username") setValue(field, credential.user);
    else if (users.length > 0 && credential.user) setValue(users[0], credential.user);
    if (kind === "password") setValue(field, credential.password);
    else if (passwords.length > 0) setValue(passwords[0], credential.password);
    (kind === "password" ? field : passwords[0] ?? field).focus();
  }

  function fillCode(field, code) {
    const boxes = inputsIn(scopeOf(field)).filter((input) => kindOf(input) === "otp" && input.maxLength === 1);
    if (field.maxLength === 1 && boxes.length >= code.length) {
      code.split("").forEach((digit, index) => setValue(boxes[index], digit));
    } else {
      setValue(field, code);
    }
  }

  function fillGenerated(field, password) {
    const targets = fieldsOf(scopeOf(field), "new-password");
    if (!targets.includes(field)) targets.push(field);
    for (const input of targets) {
      setValue(input, password);
      generated.set(input, password);
    }
  }

  // --- the person's own interactions ---

  let lastInteraction = null; // {kind: "pointer"|"key", key, path, at}

  function fieldOf(event) {
    const target = event.composedPath()[0];
    return target instanceof HTMLInputElement ? target : null;
  }

  function noteInteraction(event, kind) {
    if (!event.isTrusted) return;
    lastInteraction = { kind, key: event.key, path: event.composedPath(), at: performance.now() };
  }

  function recent(interaction) {
    return interaction && performance.now() - interaction.at <= INTERACTION_MS;
  }

  /** Whether the person (not the page's script) brought the focus to `field` just now. */
  function personFocused(field) {
    const interaction = lastInteraction;
    if (!recent(interaction)) return false;
    if (interaction.kind === "pointer") return interaction.path.includes(field);
    return interaction.key === "Tab";
  }

  function isFocused(field) {
    return document.activeElement === field || field.getRootNode().activeElement === field;
  }

  // --- Keyhaven's frame ---
  // One per document: a `keyhaven-ui` element (a closed shadow root holding the extension's
  // ui.html) in the top layer (a manual popover). Loaded ahead of time while the page has fields
  // Keyhaven can fill, so the menu shows without waiting for a frame to load.

  const HOST_STYLE = [
    "all: initial", "display: none", "position: fixed", "margin: 0", "padding: 0", "border: 0", "inset: auto",
    "overflow: hidden", "background: transparent", "opacity: 1", "visibility: visible", "transform: none",
    "filter: none", "clip-path: none", "mix-blend-mode: normal", "z-index: 2147483647", "color-scheme: normal",
  ];
  let ui = null; // {host, frame, frameToken, shown: null | {token, placement, field, width, height}}
  let uiPromise = null;
  let shownAt = 0;
  // When Keyhaven last went back on top after the page opened something in the top layer.
  let raisedAt = -Infinity;
  const SHOWN_MS = 350;
  const RAISED_MS = 1000;

  function style(element, declarations) {
    element.setAttribute("style", declarations.map((declaration) => `${declaration} !important`).join("; "));
  }

  async function ensureUI() {
    if (ui && ui.host.isConnected) return ui;
    if (uiPromise) return uiPromise;
    uiPromise = (async () => {
      if (ui) {
        ask({ kind: "ui.gone", frameToken: ui.frameToken }).catch(() => {});
        ui = null;
      }
      const { frameToken, url } = await ask({ kind: "ui.preload" });
      const host = document.createElement("keyhaven-ui");
      const root = host.attachShadow({ mode: "closed" });
      host.setAttribute("popover", "manual");
      style(host, HOST_STYLE);
      const frame = document.createElement("iframe");
      frame.src = url;
      frame.title = "Keyhaven";
      frame.setAttribute("allow", "");
      style(frame, ["all: initial", "display: block", "border: 0", "width: 100%", "height: 100%", "color-scheme: normal"]);
      root.append(frame);
      document.documentElement.append(host);
      ui = { host, frame, frameToken, shown: null };
      return ui;
    })().finally(() => {
      uiPromise = null;
    });
    return uiPromise;
  }

  function place() {
    if (!ui || !ui.shown) return;
    const { host } = ui;
    const { placement, field, width, height } = ui.shown;
    let left;
    let top;
    if (placement === "menu" && field && field.isConnected) {
      const rect = field.getBoundingClientRect();
      left = Math.max(0, Math.min(rect.left, window.innerWidth - width));
      top = rect.bottom + 2;
      if (top + height > window.innerHeight && rect.top - height - 2 >= 0) top = rect.top - height - 2;
    } else {
      left = Math.max(0, window.innerWidth - width - 12);
      top = 12;
    }
    style(host, [
      ...HOST_STYLE.filter((d) => !d.startsWith("display")),
      "display: block", `left: ${Math.round(left)}px`, `top: ${Math.round(top)}px`, `width: ${width}px`, `height: ${height}px`,
    ]);
  }

  function promote() {
    // Back to the top of the top layer, above anything the page opened since.
    try {
      if (ui.host.matches(":popover-open")) ui.host.hidePopover();
      ui.host.showPopover();
    } catch {
      // Not connected: the next show recreates it.
    }
  }

  function showUI(token, placement, field, width, height) {
    ui.shown = { token, placement, field, width, height };
    place();
    promote();
    shownAt = performance.now();
  }

  function hideUI(token) {
    if (!ui || !ui.shown || (token && ui.shown.token !== token)) return;
    const closing = ui.shown.token;
    ui.shown = null;
    style(ui.host, HOST_STYLE);
    try {
      if (ui.host.matches(":popover-open")) ui.host.hidePopover();
    } catch {
      // already gone
    }
    ask({ kind: "ui.closed", token: closing }).catch(() => {});
  }

  /** Whether Keyhaven's frame is shown as placed: connected, in the top layer, not faded, moved,
   *  shrunk or filtered by the page, and nothing the page opened in the top layer since. */
  function uiVisible(token) {
    if (!ui || !ui.shown || ui.shown.token !== token || !ui.host.isConnected) return false;
    if (!ui.host.matches(":popover-open")) return false;
    if (performance.now() - shownAt < SHOWN_MS || performance.now() - raisedAt < RAISED_MS) return false;
    const computed = getComputedStyle(ui.host);
    const rect = ui.host.getBoundingClientRect();
    if (computed.display !== "block" || computed.visibility !== "visible" || computed.opacity !== "1") return false;
    if (computed.filter !== "none" || computed.transform !== "none" || computed.clipPath !== "none") return false;
    if (Math.abs(rect.width - ui.shown.width) > 1 || Math.abs(rect.height - ui.shown.height) > 1) return false;
    for (const element of [document.documentElement, document.body]) {
      if (!element) continue;
      const outer = getComputedStyle(element);
      if (outer.opacity !== "1" || outer.filter !== "none") return false;
    }
    if (document.fullscreenElement) return false;
    return true;
  }

  // The page opened something in the top layer (a popover, a modal dialog) while Keyhaven's frame
  // shows: Keyhaven goes back on top, and for a second no click in it counts (a page that opens a
  // decoy just as the person clicks gets nothing).
  document.addEventListener(
    "toggle",
    (event) => {
      if (!ui || !ui.shown || event.target === ui.host || event.newState !== "open") return;
      promote();
      raisedAt = performance.now();
    },
    true
  );
  window.addEventListener("scroll", place, true);
  window.addEventListener("resize", place);

  // --- the menu ---

  let menuField = null;

  async function offer(field) {
    const kind = kindOf(field);
    if (!kind) return;
    let frame;
    try {
      frame = await ensureUI();
    } catch {
      return; // the extension is being reloaded
    }
    const webauthn = (field.getAttribute("autocomplete") || "").toLowerCase().split(/\s+/).includes("webauthn");
    const conditional = webauthn ? globalThis.keyhavenConditional ?? null : null;
    let answer;
    try {
      answer = await ask({
        kind: "menu.open",
        frameToken: frame.frameToken,
        field: { kind, passwordRules: field.getAttribute("passwordrules") || "" },
        conditional: conditional && { id: conditional.id, options: conditional.options },
        ancestry: globalThis.keyhavenAncestry(),
      });
    } catch {
      return;
    }
    if (!answer || !answer.token || !isFocused(field)) return;
    menuField = field;
    showUI(answer.token, "menu", field, answer.width, answer.height);
  }

  function closeMenu() {
    if (ui && ui.shown && ui.shown.placement === "menu") hideUI();
    menuField = null;
  }

  document.addEventListener(
    "pointerdown",
    (event) => {
      noteInteraction(event, "pointer");
      if (!event.isTrusted) return;
      const field = fieldOf(event);
      if (ui && ui.shown && ui.shown.placement === "menu" && field !== menuField) closeMenu();
      // A press on a field that already has the focus (no focusin follows).
      if (field && kindOf(field) && isFocused(field)) offer(field);
    },
    true
  );
  document.addEventListener(
    "keydown",
    (event) => {
      noteInteraction(event, "key");
      if (!event.isTrusted) return;
      if (event.key === "Escape" && ui && ui.shown && ui.shown.placement === "menu") closeMenu();
      const field = fieldOf(event);
      if (event.key === "ArrowDown" && field && kindOf(field)) {
        if (ui && ui.shown && field === menuField) {
          event.preventDefault();
          ui.frame.focus();
          ask({ kind: "ui.focus", token: ui.shown.token }).catch(() => {});
        } else {
          offer(field);
        }
      }
    },
    true
  );
  document.addEventListener(
    "focusin",
    (event) => {
      const field = fieldOf(event);
      if (!field || field === menuField || !kindOf(field)) return;
      if (!event.isTrusted || !personFocused(field)) return; // focused by the page's script
      offer(field);
    },
    true
  );
  document.addEventListener(
    "input",
    (event) => {
      const field = fieldOf(event);
      if (event.isTrusted && field && field.type === "password") typed.set(field, field.value);
    },
    true
  );

  // Loaded ahead while the page has a field Keyhaven could fill (checked at idle and as forms appear).
  function preloadIfUseful() {
    if (ui) return;
    if (inputsIn(document).some((input) => kindOf(input))) ensureUI().catch(() => {});
  }
  preloadIfUseful();
  let preloadScheduled = false;
  const forms = new MutationObserver(() => {
    if (ui) return forms.disconnect();
    if (preloadScheduled) return;
    preloadScheduled = true;
    setTimeout(() => {
      preloadScheduled = false;
      preloadIfUseful();
    }, 200);
  });
  forms.observe(document.documentElement, { childList: true, subtree: true });

  // --- saving after a submit ---

  async function checkPendingSave() {
    try {
      // Asked first without a frame: most pages have nothing to save and get no frame for it.
      if (!ui && !(await ask({ kind: "pendingSave" })).due) return;
      const frame = await ensureUI();
      const pending = await ask({ kind: "pendingSave", frameToken: frame.frameToken });
      if (pending && pending.token) showUI(pending.token, "prompt", null, pending.width, pending.height);
    } catch {
      // Locked or not paired: nothing to offer.
    }
  }

  document.addEventListener(
    "submit",
    (event) => {
      const form = event.composedPath()[0];
      if (!(form instanceof HTMLFormElement)) return;
      // The person's own submit: their click or key just now (a script's requestSubmit() alone is not).
      const activated = navigator.userActivation ? navigator.userActivation.isActive : false;
      if (!event.isTrusted || !(activated || recent(lastInteraction))) return;
      const inputs = [...form.querySelectorAll("input")];
      const fresh = inputs.filter((input) => kindOf(input) === "new-password" && input.value);
      const current = inputs.filter((input) => kindOf(input) === "password" && input.value);
      const field = fresh[0] ?? current[0];
      if (!field) return;
      // Only a password the person typed, or one Keyhaven generated, into that very field.
      if (typed.get(field) !== field.value && generated.get(field) !== field.value) return;
      const userField =
        inputs.find((input) => (input.getAttribute("autocomplete") || "").split(/\s+/).includes("username") && input.value) ??
        inputs.find((input) => kindOf(input) === "username" && input.value);
      ask({ kind: "submitted", user: userField ? userField.value : "", password: field.value })
        .then(() => setTimeout(checkPendingSave, 300))
        .catch(() => {});
    },
    true
  );

  // --- passkeys: Keyhaven's sheet for a WebAuthn call the browser handed to Keyhaven ---

  async function showSheet(message) {
    const frame = await ensureUI();
    const shown = await ask({ kind: "passkey.sheet", request: message.request, frameToken: frame.frameToken });
    if (shown && shown.token) showUI(shown.token, "sheet", null, shown.width, shown.height);
    return shown;
  }

  // --- what the background tells this frame ---

  function owns(token) {
    return ui && ui.shown && ui.shown.token === token;
  }

  api.runtime.onMessage.addListener((message, _sender, sendResponse) => {
    if (!message || typeof message.kind !== "string") return false;
    switch (message.kind) {
      case "ui.visible":
        sendResponse({ visible: uiVisible(message.token) });
        return false;
      case "ui.hide":
        sendResponse({});
        if (owns(message.token)) {
          const field = ui.shown.placement === "menu" ? menuField : null;
          hideUI(message.token);
          if (message.refocus && field) field.focus();
          if (field) menuField = null;
        }
        return false;
      case "ui.resize":
        sendResponse({});
        if (owns(message.token)) {
          ui.shown.width = message.width;
          ui.shown.height = message.height;
          place();
          shownAt = performance.now();
        }
        return false;
      case "ui.fill": {
        // What the person chose in Keyhaven's menu (or chooser), for the field the menu was for.
        if (!menuField || !ui || message.frameToken !== ui.frameToken) {
          sendResponse({ filled: false });
          return false;
        }
        const field = menuField;
        if (message.credential) fillCredential(field, message.credential);
        else if (message.code) fillCode(field, message.code);
        else if (message.generated) fillGenerated(field, message.generated);
        closeMenu();
        sendResponse({ filled: true });
        return false;
      }
      case "ui.reoffer":
        // Keyhaven was unlocked in its own page: the menu comes back for the field that asked.
        sendResponse({});
        if (menuField && message.frameToken === ui?.frameToken && isFocused(menuField)) offer(menuField);
        return false;
      case "passkey.reply":
        // The passkey the person chose in Keyhaven's menu answers the page's conditional get.
        sendResponse({});
        if (ui && message.frameToken === ui.frameToken) {
          if (globalThis.keyhavenConditional && globalThis.keyhavenConditional.id === message.id) {
            globalThis.keyhavenConditional = null;
          }
          const target = window.location.origin === "null" ? "*" : window.location.origin;
          window.postMessage({ __keyhaven: "passkey.reply", id: message.id, responseJson: message.responseJson }, target);
        }
        return false;
      case "passkey.show":
        // Only the frame that made the call: the caller's origin, and the focus WebAuthn requires
        // (sent to every frame of the tab when the browser names no frame; `direct` when it does).
        if (location.origin !== message.origin) return false;
        if (!message.direct && message.focused !== false &&
            (!document.hasFocus() || (document.activeElement && document.activeElement.tagName === "IFRAME"))) {
          return false;
        }
        showSheet(message).then(
          (shown) => sendResponse({ shown: !!(shown && shown.token) }),
          () => sendResponse({ shown: false })
        );
        return true;
      case "passkey.frameAllows": {
        // Firefox's page-world calls: does this frame let its child frame `frameId` use
        // `feature` (the iframe's `allow` attribute; Permissions Policy)?
        const frames = [...document.querySelectorAll("iframe")];
        const element = api.runtime.getFrameId ? frames.find((candidate) => {
          try {
            return api.runtime.getFrameId(candidate) === message.frameId;
          } catch {
            return false;
          }
        }) : null;
        const own = globalThis.keyhavenAncestry();
        sendResponse(
          element
            ? { allow: element.getAttribute("allow") || "", src: element.src, origin: location.origin, parentFrameId: own.parentFrameId }
            : { allow: null }
        );
        return false;
      }
      default:
        return false;
    }
  });

  if (window === window.top) checkPendingSave();
})();
