// Carries what the page-world script (page-passkeys.js) reports — the site's WebAuthn signals —
// to the background, which adds the origin the browser gives this frame.
"use strict";
(() => {
  if (window.__keyhavenRelay) return;
  window.__keyhavenRelay = true;
  window.addEventListener("message", (event) => {
    if (event.source !== window || !event.data || event.data.__keyhaven !== "passkey.signal") return;
    globalThis.keyhavenAsk({ kind: "passkey.signal", signal: event.data.signal }).catch(() => {});
  });
})();
