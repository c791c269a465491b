// The unlock page the extension opens when the agent is locked (Apple's
// prepareInterfaceToProvideCredential): the master password goes to the agent inside the sealed
// session; the page that asked then fills.
"use strict";
const api = globalThis.browser ?? globalThis.chrome;

const ask = globalThis.keyhavenAsk;
// `?verify=1`: Keyhaven is unlocked, and a site asked it to verify the person for a passkey.
const verifying = new URLSearchParams(location.search).has("verify");
if (verifying) {
  document.querySelector("h1").textContent = "Verify it is you";
  document.querySelector("#unlock button").textContent = "Verify";
  document.title = "Verify it is you — Keyhaven";
}

document.getElementById("unlock").addEventListener("submit", async (event) => {
  event.preventDefault();
  const field = document.getElementById("master");
  const status = document.getElementById("status");
  status.textContent = verifying ? "Verifying…" : "Unlocking…";
  try {
    await ask({ kind: verifying ? "passkey.verified" : "unlock", masterPassword: field.value });
    field.value = "";
    status.textContent = verifying ? "Verified." : "Unlocked.";
    document.body.dataset.state = "unlocked";
  } catch (error) {
    field.value = "";
    status.textContent = error.localizedFailureReason || "Keyhaven could not unlock.";
  }
});
