// Carries what the page-world script (page-passkeys.js) reports — the site's WebAuthn signals, and
// in Firefox its create()/get() calls — to the background, which adds the origin the browser gives
// this frame, and brings the answer back.
"use strict";
(() => {
  if (window.__keyhavenRelay) return;
  window.__keyhavenRelay = true;
  const target = window.location.origin === "null" ? "*" : window.location.origin;
  // A page decides how often it posts: at most a few signals a second reach Keyhaven, the rest are
  // dropped (a page's flood must not queue work in the agent).
  const SIGNALS_PER_SECOND = 5;
  let allowance = SIGNALS_PER_SECOND;
  let checked = performance.now();
  function signalAllowed() {
    const now = performance.now();
    allowance = Math.min(SIGNALS_PER_SECOND, allowance + ((now - checked) / 1000) * SIGNALS_PER_SECOND);
    checked = now;
    if (allowance < 1) return false;
    allowance -= 1;
    return true;
  }
  window.addEventListener("message", (event) => {
    if (event.source !== window || !event.data) return;
    const data = event.data;
    if (data.__keyhaven === "passkey.signal") {
      if (!signalAllowed()) return;
      globalThis.keyhavenAsk({ kind: "passkey.signal", signal: data.signal }).catch(() => {});
    } else if (data.__keyhaven === "passkey.conditional" && typeof data.id === "string") {
      // A conditional get the page started: content.js offers Keyhaven's passkeys in its menu (the
      // page can start one at any time; nothing is used before the person chooses in that menu).
      globalThis.keyhavenConditional = { id: data.id, options: data.options };
    } else if (data.__keyhaven === "passkey.conditional.withdraw") {
      if (globalThis.keyhavenConditional && globalThis.keyhavenConditional.id === data.id) globalThis.keyhavenConditional = null;
    } else if (data.__keyhaven === "passkey.conditionalCreate" && typeof data.id === "string") {
      globalThis
        .keyhavenAsk({ kind: "passkey.conditionalCreate", options: data.options, ancestry: globalThis.keyhavenAncestry() })
        .then(
          (reply) => window.postMessage({ __keyhaven: "passkey.reply", id: data.id, ...reply }, target),
          () => window.postMessage({ __keyhaven: "passkey.reply", id: data.id, fallback: true }, target)
        );
    } else if (data.__keyhaven === "passkey.call" && (data.kind === "create" || data.kind === "get")) {
      // Firefox's create()/get(): the answer, or fall back to the browser's own.
      globalThis
        .keyhavenAsk({ kind: "passkey.page", call: { kind: data.kind, options: data.options }, ancestry: globalThis.keyhavenAncestry() })
        .then(
          (reply) => window.postMessage({ __keyhaven: "passkey.reply", id: data.id, ...reply }, target),
          () => window.postMessage({ __keyhaven: "passkey.reply", id: data.id, fallback: true }, target)
        );
    }
  });
})();
