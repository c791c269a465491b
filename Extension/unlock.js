// The unlock page the extension opens when the agent is locked (Apple's
// prepareInterfaceToProvideCredential): the master password goes to the agent inside the sealed
// session; the page that asked then fills.
"use strict";
const api = globalThis.browser ?? globalThis.chrome;

const ask = globalThis.keyhavenAsk;

document.getElementById("unlock").addEventListener("submit", async (event) => {
  event.preventDefault();
  const field = document.getElementById("master");
  const status = document.getElementById("status");
  status.textContent = "Unlocking…";
  try {
    await ask({ kind: "unlock", masterPassword: field.value });
    field.value = "";
    status.textContent = "Unlocked.";
    document.body.dataset.state = "unlocked";
  } catch (error) {
    field.value = "";
    status.textContent = error.localizedFailureReason || "Keyhaven could not unlock.";
  }
});
