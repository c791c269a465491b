// One way for the extension's pages and content scripts to ask the background: the reply's `ok`,
// or a thrown `{code, localizedFailureReason}` (Firefox's promise-based `browser`, Chromium's
// callback `chrome`).
"use strict";

globalThis.keyhavenAsk = async function keyhavenAsk(message) {
  const reply = globalThis.browser
    ? await globalThis.browser.runtime.sendMessage(message)
    : await new Promise((resolve) => chrome.runtime.sendMessage(message, resolve));
  if (!reply) throw { code: "failed", localizedFailureReason: "Keyhaven did not answer." };
  if (reply.error) throw reply.error;
  return reply.ok;
};
