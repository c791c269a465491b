// Keyhaven's passkey chooser: the window the background opens for a WebAuthn call it received
// (Chromium's webAuthenticationProxy). Choosing here is the user presence the passkey's
// authenticator data asserts; the master password, when the site requires verification and the
// unlock is old, is the user verification. Nothing secret is shown: keys never leave the agent.
"use strict";

const ask = globalThis.keyhavenAsk;
const request = new URLSearchParams(location.search).get("request");
const status = document.getElementById("status");
const master = document.getElementById("master");

function say(text) {
  status.textContent = text;
}

async function answer(fields) {
  say("Asking Keyhaven…");
  try {
    await ask({ kind: "passkey.answer", request, ...fields, masterPassword: master.value || undefined });
    master.value = "";
    document.body.dataset.state = "done";
    say("Done.");
    window.close();
  } catch (error) {
    master.value = "";
    if (error.code === "userVerificationRequired" || error.code === "wrongPassword") {
      document.getElementById("verify").hidden = false;
      master.focus();
    }
    say(error.localizedFailureReason || "Keyhaven could not answer.");
  }
}

async function show() {
  let choices;
  try {
    choices = await ask({ kind: "passkey.pending", request });
  } catch (error) {
    say(error.localizedFailureReason || "This request is over.");
    document.body.dataset.state = "gone";
    return;
  }
  document.getElementById("verify").hidden = !choices.verificationRequired;
  const site = document.getElementById("site");
  const list = document.getElementById("choices");
  if (choices.kind === "create") {
    document.getElementById("title").textContent = "Save a passkey?";
    site.textContent = `For ${choices.user || "your account"} on ${choices.rpId}.`;
    const save = document.getElementById("save");
    save.hidden = choices.excluded;
    if (choices.excluded) say(`Keyhaven already has a passkey for this account on ${choices.rpId}.`);
    save.addEventListener("click", () => answer({ confirmed: true }));
    if (!choices.excluded) save.focus();
  } else {
    document.getElementById("title").textContent = "Sign in with a passkey";
    site.textContent = choices.passkeys.length ? `Choose an account for ${choices.rpId}.` : `Keyhaven has no passkey for ${choices.rpId}.`;
    for (const passkey of choices.passkeys) {
      const option = document.createElement("button");
      option.type = "button";
      option.setAttribute("role", "option");
      option.className = "choice";
      option.textContent = passkey.user;
      if (passkey.displayName && passkey.displayName !== passkey.user) {
        const detail = document.createElement("span");
        detail.textContent = passkey.displayName;
        option.append(document.createElement("br"), detail);
      }
      option.addEventListener("click", () => answer({ credentialId: passkey.credentialId }));
      list.append(option);
    }
    list.querySelector("button")?.focus();
  }
  document.body.dataset.state = "ready";
}

document.getElementById("other").addEventListener("click", () => answer({ decline: "other" }));
document.getElementById("cancel").addEventListener("click", () => answer({ decline: "cancel" }));
document.getElementById("verify").addEventListener("submit", (event) => event.preventDefault());
show();
