// Carries what the page-world script (page-passkeys.js) reports — the site's WebAuthn signals, and
// in Firefox its create()/get() calls — to the background, which adds the origin the browser gives
// this frame, and brings the answer back.
"use strict";
(() => {
  if (window.__keyhavenRelay) return;
  window.__keyhavenRelay = true;
  const target = window.location.origin === "null" ? "*" : window.location.origin;
  window.addEventListener("message", (event) => {
    if (event.source !== window || !event.data) return;
    const data = event.data;
    if (data.__keyhaven === "passkey.signal") {
      globalThis.keyhavenAsk({ kind: "passkey.signal", signal: data.signal }).catch(() => {});
    } else if (data.__keyhaven === "passkey.conditional" && typeof data.id === "string") {
      // A conditional get the page started: content.js offers Keyhaven's passkeys in its menu.
      globalThis.keyhavenConditional = { id: data.id, options: data.options };
    } else if (data.__keyhaven === "passkey.conditional.withdraw") {
      if (globalThis.keyhavenConditional && globalThis.keyhavenConditional.id === data.id) globalThis.keyhavenConditional = null;
    } else if (data.__keyhaven === "passkey.conditionalCreate" && typeof data.id === "string") {
      globalThis
        .keyhavenAsk({ kind: "passkey.conditionalCreate", options: data.options })
        .then(
          (reply) => window.postMessage({ __keyhaven: "passkey.reply", id: data.id, ...reply }, target),
          () => window.postMessage({ __keyhaven: "passkey.reply", id: data.id, fallback: true }, target)
        );
    } else if (data.__keyhaven === "passkey.call" && (data.kind === "create" || data.kind === "get")) {
      // Firefox's create()/get(): the answer, or fall back to the browser's own.
      globalThis
        .keyhavenAsk({ kind: "passkey.page", call: { kind: data.kind, options: data.options } })
        .then(
          (reply) => window.postMessage({ __keyhaven: "passkey.reply", id: data.id, ...reply }, target),
          () => window.postMessage({ __keyhaven: "passkey.reply", id: data.id, fallback: true }, target)
        );
    }
  });
})();
