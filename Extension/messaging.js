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

/** Where this frame sits: whether it is same-origin with every ancestor (WebAuthn's
 *  sameOriginWithAncestors; a cross-origin ancestor cannot even be read) and its parent's frame id
 *  as the browser numbers frames (for the Permissions Policy walk of passkey calls). */
globalThis.keyhavenAncestry = function keyhavenAncestry() {
  const api = globalThis.browser ?? globalThis.chrome;
  let sameOriginWithAncestors = true;
  try {
    let current = window;
    while (current !== current.top) {
      current = current.parent;
      if (current.location.origin !== window.location.origin) sameOriginWithAncestors = false;
    }
  } catch {
    sameOriginWithAncestors = false;
  }
  let parentFrameId = null;
  try {
    if (window !== window.top && api.runtime.getFrameId) parentFrameId = api.runtime.getFrameId(window.parent);
  } catch {
    parentFrameId = null;
  }
  return { sameOriginWithAncestors, parentFrameId };
};
