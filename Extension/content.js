// Keyhaven AutoFill in the page: recognises username, password, new-password and one-time-code
// fields (also in open shadow roots and in forms that appear late: focus is watched on the whole
// document), shows Keyhaven's menu when one is focused (a `keyhaven-menu` element with an open
// shadow root; entries have role="option" and the user name as text), fills only what the person
// chooses, and offers to save or update a password after a form is submitted.
(() => {
  "use strict";
  if (window.__keyhavenContent) return;
  window.__keyhavenContent = true;

  const api = globalThis.browser ?? globalThis.chrome;
  const valueSetter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set;
  let menu = null;
  let menuField = null;
  let pendingFill = null;

  const ask = globalThis.keyhavenAsk;

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

  // --- the menu ---

  function closeMenu() {
    if (menu) menu.remove();
    menu = null;
    menuField = null;
  }

  function showMenu(field, entries) {
    closeMenu();
    if (entries.length === 0) return;
    menu = document.createElement("keyhaven-menu");
    menuField = field;
    const root = menu.attachShadow({ mode: "open" });
    const rect = field.getBoundingClientRect();
    menu.style.cssText =
      `all: initial; position: absolute; z-index: 2147483647; left: ${rect.left + window.scrollX}px; ` +
      `top: ${rect.bottom + window.scrollY + 2}px;`;
    root.innerHTML =
      "<style>" +
      ":host{all:initial} [role=listbox]{font:14px system-ui,sans-serif;background:#fff;color:#111;border:1px solid #999;" +
      "border-radius:8px;box-shadow:0 4px 16px rgba(0,0,0,.2);min-width:220px;padding:4px}" +
      "[role=option],.note{display:block;padding:6px 10px;border-radius:6px;cursor:pointer}" +
      "[role=option]:hover,[role=option]:focus{background:#e8f0fe;outline:none} .note{color:#555;cursor:default}" +
      "small{display:block;color:#666}</style>";
    const list = document.createElement("div");
    list.setAttribute("role", "listbox");
    list.setAttribute("aria-label", "Keyhaven");
    for (const entry of entries) {
      const item = document.createElement("div");
      if (entry.action) {
        item.setAttribute("role", "option");
        item.tabIndex = -1;
        item.addEventListener("mousedown", (event) => event.preventDefault());
        item.addEventListener("click", () => entry.action());
        item.addEventListener("keydown", (event) => {
          if (event.key === "Enter") entry.action();
        });
      } else {
        item.className = "note";
      }
      item.textContent = entry.text;
      if (entry.detail) {
        const small = document.createElement("small");
        small.textContent = entry.detail;
        item.append(small);
      }
      list.append(item);
    }
    root.append(list);
    document.documentElement.append(menu);
  }

  function note(field, text) {
    showMenu(field, [{ text }]);
  }

  async function choose(field, identity, confirmed, fromCredentialList = false) {
    pendingFill = null;
    try {
      if (identity.kind === "oneTimeCode") {
        const answer = await ask({ kind: "otp", recordIdentifier: identity.recordIdentifier, confirmed });
        fillCode(field, answer.code);
      } else {
        const answer = await ask({
          kind: "fill", recordIdentifier: identity.recordIdentifier, confirmed, fromCredentialList,
        });
        fillCredential(field, answer.credential);
      }
      closeMenu();
    } catch (error) {
      if (error.code === "userInteractionRequired" && !confirmed) {
        // Not silently: the person confirms here, in Keyhaven's own menu.
        showMenu(field, [
          { text: error.localizedFailureReason },
          { text: `Fill ${identity.user} from ${identity.serviceIdentifier}?`, action: () => choose(field, identity, true) },
          { text: "Cancel", action: closeMenu },
        ]);
      } else if (error.code === "locked") {
        pendingFill = { field, identity };
        note(field, "Keyhaven is locked: unlock it in the tab that opened.");
      } else {
        note(field, error.localizedFailureReason || "Keyhaven could not fill this field.");
      }
    }
  }

  /** "Other passwords…": every password in Keyhaven, those for this page first; another site's
   *  is filled only after the person confirms it for this page. */
  async function otherPasswords(field) {
    try {
      const answer = await ask({ kind: "list" });
      const host = location.host;
      showMenu(field, answer.identities.map((identity) => ({
        text: identity.user || "(no user name)",
        detail: identity.serviceIdentifier,
        action: () =>
          identity.match
            ? choose(field, identity, false)
            : showMenu(field, [
                { text: `Use the password saved for ${identity.serviceIdentifier} on ${host}?` },
                { text: `Fill ${identity.user || "it"} here`, action: () => choose(field, identity, true, true) },
                { text: "Cancel", action: closeMenu },
              ]),
      })));
    } catch (error) {
      note(field, error.localizedFailureReason || "Keyhaven could not list the passwords.");
    }
  }

  /** A passkey chosen in the menu answers the page's conditional get (the choice is the presence). */
  async function usePasskey(field, conditional, credentialId) {
    try {
      const answer = await ask({ kind: "passkey.conditional.assert", options: conditional.options, credentialId });
      if (globalThis.keyhavenConditional === conditional) globalThis.keyhavenConditional = null;
      const target = window.location.origin === "null" ? "*" : window.location.origin;
      window.postMessage({ __keyhaven: "passkey.reply", id: conditional.id, responseJson: answer.responseJson }, target);
      closeMenu();
    } catch (error) {
      note(field, error.localizedFailureReason || "Keyhaven could not use the passkey.");
    }
  }

  async function generate(field) {
    try {
      const answer = await ask({ kind: "generate", passwordRules: field.getAttribute("passwordrules") || "" });
      for (const input of fieldsOf(scopeOf(field), "new-password")) setValue(input, answer.password);
      if (!fieldsOf(scopeOf(field), "new-password").includes(field)) setValue(field, answer.password);
      closeMenu();
    } catch (error) {
      note(field, error.localizedFailureReason || "Keyhaven could not make a password.");
    }
  }

  async function offer(field) {
    const kind = kindOf(field);
    if (!kind) return;
    const entries = [];
    let answered = false;
    if (kind === "new-password") entries.push({ text: "Use strong password", detail: "Generated by Keyhaven", action: () => generate(field) });
    const conditional = globalThis.keyhavenConditional;
    const webauthn = (field.getAttribute("autocomplete") || "").toLowerCase().split(/\s+/).includes("webauthn");
    if (conditional && webauthn) {
      // The page's conditional get: Keyhaven's passkeys for this site first.
      try {
        const choices = await ask({ kind: "passkey.conditional.choices", options: conditional.options });
        for (const passkey of choices.passkeys) {
          entries.push({
            text: passkey.user || "(no user name)",
            detail: `passkey · ${choices.rpId}`,
            action: () => usePasskey(field, conditional, passkey.credentialId),
          });
        }
      } catch {
        // Locked, not paired, passkeys off: the password entries below say what to do.
      }
    }
    try {
      const kinds = kind === "otp" ? ["oneTimeCode"] : ["password"];
      const answer = await ask({ kind: "query", kinds });
      answered = true;
      for (const identity of answer.identities) {
        entries.push({
          text: identity.user || "(no user name)",
          detail: identity.kind === "oneTimeCode" ? `one-time code · ${identity.serviceIdentifier}` : identity.serviceIdentifier,
          action: () => choose(field, identity, false),
        });
      }
    } catch (error) {
      if (kind !== "new-password") {
        entries.push({
          text:
            error.code === "locked"
              ? "Keyhaven is locked: unlock it in the tab that opened."
              : error.code === "notPaired"
                ? "Pair this browser: click the Keyhaven icon."
                : error.localizedFailureReason || "Keyhaven is not available.",
        });
      }
    }
    if ((kind === "username" || kind === "password") && answered) {
      entries.push({ text: "Other passwords…", action: () => otherPasswords(field) });
    }
    if (document.activeElement === field || field.getRootNode().activeElement === field) showMenu(field, entries);
  }

  function fieldOf(event) {
    const target = event.composedPath()[0];
    return target instanceof HTMLInputElement ? target : null;
  }

  document.addEventListener(
    "focusin",
    (event) => {
      const field = fieldOf(event);
      if (field && field !== menuField) offer(field);
    },
    true
  );
  document.addEventListener(
    "mousedown",
    (event) => {
      if (menu && event.composedPath().includes(menu)) return;
      const field = fieldOf(event);
      if (field && field === menuField) return;
      closeMenu();
      if (field && (document.activeElement === field || field.getRootNode().activeElement === field)) offer(field);
    },
    true
  );
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeMenu();
    if (event.key === "ArrowDown" && menu && fieldOf(event) === menuField) {
      const first = menu.shadowRoot.querySelector("[role=option]");
      if (first) {
        event.preventDefault();
        first.focus();
      }
    }
  }, true);

  // --- saving after a submit ---

  function showSavePrompt(offerToSave) {
    const old = document.querySelector("keyhaven-save");
    if (old) old.remove();
    const prompt = document.createElement("keyhaven-save");
    const root = prompt.attachShadow({ mode: "open" });
    prompt.style.cssText = "all: initial; position: fixed; z-index: 2147483647; top: 12px; right: 12px;";
    root.innerHTML =
      "<style>div{font:14px system-ui,sans-serif;background:#fff;color:#111;border:1px solid #999;border-radius:10px;" +
      "box-shadow:0 4px 16px rgba(0,0,0,.2);padding:12px;max-width:320px} button{margin:8px 8px 0 0;font:inherit}</style>";
    const box = document.createElement("div");
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-label", "Keyhaven");
    const text = document.createElement("p");
    text.textContent =
      offerToSave.action === "update"
        ? `Update the password of ${offerToSave.user || "this account"} on ${offerToSave.host} in Keyhaven?`
        : `Save the password of ${offerToSave.user || "this account"} on ${offerToSave.host} in Keyhaven?`;
    const yes = document.createElement("button");
    yes.textContent = offerToSave.action === "update" ? "Update" : "Save";
    yes.addEventListener("click", async () => {
      try {
        const saved = await ask({ kind: "save" });
        text.textContent = saved.action === "updated" ? "Updated in Keyhaven." : "Saved in Keyhaven.";
      } catch (error) {
        text.textContent = error.localizedFailureReason || "Keyhaven could not save it.";
      }
      yes.remove();
      no.remove();
      setTimeout(() => prompt.remove(), 1500);
    });
    const no = document.createElement("button");
    no.textContent = "Not now";
    no.addEventListener("click", () => {
      ask({ kind: "dismissSave" }).catch(() => {});
      prompt.remove();
    });
    box.append(text, yes, no);
    root.append(box);
    document.documentElement.append(prompt);
  }

  async function checkPendingSave() {
    try {
      const pending = await ask({ kind: "pendingSave" });
      if (pending.action) showSavePrompt(pending);
    } catch {
      // Locked or not paired: nothing to offer.
    }
  }

  document.addEventListener(
    "submit",
    (event) => {
      const form = event.composedPath()[0];
      if (!(form instanceof HTMLFormElement)) return;
      const inputs = [...form.querySelectorAll("input")];
      const fresh = inputs.filter((input) => kindOf(input) === "new-password" && input.value);
      const current = inputs.filter((input) => kindOf(input) === "password" && input.value);
      const password = (fresh[0] ?? current[0])?.value;
      if (!password) return;
      const userField =
        inputs.find((input) => (input.getAttribute("autocomplete") || "").split(/\s+/).includes("username") && input.value) ??
        inputs.find((input) => kindOf(input) === "username" && input.value);
      ask({ kind: "submitted", user: userField ? userField.value : "", password })
        .then(() => setTimeout(checkPendingSave, 300))
        .catch(() => {});
    },
    true
  );

  // --- passkeys: Keyhaven's sheet for a WebAuthn call the browser handed to Keyhaven ---
  // Choosing here is the passkey's user presence (only real clicks count: `isTrusted`). The
  // master password is never typed into a page: "Verify…" opens Keyhaven's own page for it.

  let passkeySheet = null;
  const SHEET_CLICK_DELAY_MS = 400;

  function closePasskeySheet() {
    if (passkeySheet) passkeySheet.element.remove();
    passkeySheet = null;
  }

  async function showPasskeySheet(request) {
    let choices;
    try {
      choices = await ask({ kind: "passkey.pending", request });
    } catch {
      return;
    }
    closePasskeySheet();
    const element = document.createElement("keyhaven-passkey");
    const root = element.attachShadow({ mode: "open" });
    element.style.cssText = "all: initial; position: fixed; z-index: 2147483647; top: 12px; right: 12px;";
    root.innerHTML =
      "<style>[role=dialog]{font:14px system-ui,sans-serif;background:#fff;color:#111;border:1px solid #999;" +
      "border-radius:10px;box-shadow:0 4px 16px rgba(0,0,0,.2);padding:12px 14px;width:300px}" +
      "h2{font-size:15px;margin:0 0 6px} p{margin:4px 0} button{margin:8px 8px 0 0;font:inherit;padding:4px 10px}" +
      "[role=option]{display:block;width:100%;text-align:left;margin:6px 0 0} small{display:block;color:#555}</style>";
    const box = document.createElement("div");
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-label", "Keyhaven passkey");
    box.dataset.request = request;
    const title = document.createElement("h2");
    const site = document.createElement("p");
    const status = document.createElement("p");
    status.setAttribute("role", "status");
    box.append(title, site);
    passkeySheet = { element, request };
    const shownAt = performance.now();

    function button(text, fields, role) {
      const item = document.createElement("button");
      item.type = "button";
      item.textContent = text;
      if (role) item.setAttribute("role", role);
      item.addEventListener("click", async (event) => {
        // Real clicks only, and not in the first moments: a page cannot click for the person, nor
        // slip the sheet under a click meant for something else (as browsers guard their prompts).
        if (!event.isTrusted || performance.now() - shownAt < SHEET_CLICK_DELAY_MS) return;
        status.textContent = "Asking Keyhaven…";
        try {
          await ask({ kind: fields.verify ? "passkey.verify" : "passkey.answer", request, ...fields });
          if (!fields.verify) closePasskeySheet();
          else status.textContent = "Verify in Keyhaven's window, then choose again here.";
        } catch (error) {
          status.textContent = error.localizedFailureReason || "Keyhaven could not answer.";
          if (error.code !== "userVerificationRequired" && error.code !== "wrongPassword") {
            setTimeout(() => passkeySheet && passkeySheet.request === request && closePasskeySheet(), 2500);
          }
        }
      });
      return item;
    }

    if (choices.kind === "create") {
      title.textContent = "Save a passkey?";
      site.textContent = `For ${choices.user || "your account"} on ${choices.rpId}.`;
      if (choices.excluded) status.textContent = `Keyhaven already has a passkey for this account on ${choices.rpId}.`;
      else box.append(button("Save passkey in Keyhaven", { confirmed: true }));
    } else {
      title.textContent = "Sign in with a passkey";
      site.textContent = choices.passkeys.length
        ? `Choose an account for ${choices.rpId}.`
        : `Keyhaven has no passkey for ${choices.rpId}.`;
      for (const passkey of choices.passkeys) {
        const option = button(passkey.user || "(no user name)", { credentialId: passkey.credentialId }, "option");
        if (passkey.displayName && passkey.displayName !== passkey.user) {
          const small = document.createElement("small");
          small.textContent = passkey.displayName;
          option.append(small);
        }
        box.append(option);
      }
    }
    if (choices.verificationRequired) {
      const why = document.createElement("p");
      why.textContent = "The site asks Keyhaven to verify it is you.";
      box.append(why, button("Verify…", { verify: true }));
    }
    const row = document.createElement("div");
    row.append(button("Use another device or security key", { decline: "other" }), button("Cancel", { decline: "cancel" }));
    box.append(row, status);
    root.append(box);
    document.documentElement.append(element);
  }

  api.runtime.onMessage.addListener((message, _sender, sendResponse) => {
    if (message && message.kind === "retryFill" && pendingFill) {
      const { field, identity } = pendingFill;
      choose(field, identity, false);
    }
    if (message && message.kind === "passkey.show") {
      // Only the frame that made the call: the caller's origin, and the focus WebAuthn requires.
      if (location.origin !== message.origin) return false;
      // Sent to every frame of the tab (the proxy names no frame): the one with the focus WebAuthn
      // requires. A page-world call names its frame (`direct`).
      if (!message.direct && (!document.hasFocus() || (document.activeElement && document.activeElement.tagName === "IFRAME"))) {
        return false;
      }
      showPasskeySheet(message.request);
      sendResponse({ shown: true });
    }
    if (message && message.kind === "passkey.close" && passkeySheet && passkeySheet.request === message.request) {
      closePasskeySheet();
    }
    return false;
  });

  if (window === window.top) checkPendingSave();
})();
