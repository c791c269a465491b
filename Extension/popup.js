// The toolbar popup: pairing (Pair → the 6-digit code `keyhaven browser pair` prints → Confirm) and state.
"use strict";
const api = globalThis.browser ?? globalThis.chrome;

const ask = globalThis.keyhavenAsk;

const status = document.getElementById("status");
const pairing = document.getElementById("pairing");
const codeForm = document.getElementById("code-form");

async function refresh() {
  try {
    const state = await ask({ kind: "status" });
    if (state.paired && state.state) {
      status.textContent = state.state === "unlocked" ? "Paired · Keyhaven is unlocked." : "Paired · Keyhaven is locked.";
      pairing.hidden = true;
    } else {
      status.textContent = state.error ? state.error.localizedFailureReason : "This browser is not paired with Keyhaven.";
      pairing.hidden = state.paired;
    }
    document.body.dataset.state = state.paired ? state.state || "paired" : "unpaired";
  } catch (error) {
    status.textContent = error.localizedFailureReason || "Keyhaven is not available.";
    pairing.hidden = false;
  }
}

document.getElementById("pair").addEventListener("click", async () => {
  try {
    await ask({ kind: "pair.begin" });
    status.textContent = "Type the code `keyhaven browser pair` shows.";
    codeForm.hidden = false;
    document.getElementById("code").focus();
  } catch (error) {
    status.textContent = error.localizedFailureReason || "Pairing could not start.";
  }
});

codeForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    await ask({ kind: "pair.finish", code: document.getElementById("code").value });
    codeForm.hidden = true;
    await refresh();
  } catch (error) {
    status.textContent = error.localizedFailureReason || "Pairing failed.";
    // A wrong code leaves the request open for another try; otherwise pairing starts over (Pair).
    if (error.code !== "userCanceled" || /3 times/.test(error.localizedFailureReason || "")) codeForm.hidden = true;
  }
});

// Passkeys on (the default) or off: off, Keyhaven never stands between a site and the browser's
// own authenticators.
const passkeys = document.getElementById("passkeys");
api.storage.local.get("passkeys").then((stored) => {
  passkeys.checked = stored.passkeys !== false;
});
passkeys.addEventListener("change", () => api.storage.local.set({ passkeys: passkeys.checked }));
// Conditional create (off by default): a site that asks right after Keyhaven filled its password
// gets a passkey without a question.
const conditionalCreate = document.getElementById("conditional-create");
api.storage.local.get("conditionalCreate").then((stored) => {
  conditionalCreate.checked = stored.conditionalCreate === true;
});
conditionalCreate.addEventListener("change", () => api.storage.local.set({ conditionalCreate: conditionalCreate.checked }));

refresh();
