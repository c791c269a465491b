// `/assets/shiny-passkeys.js`: the one script shiny's pages load (the CSP allows no other). What
// a site does with WebAuthn, using the browser's JSON helpers (`parseCreationOptionsFromJSON`,
// `toJSON`):
//
// - the account's passkeys page: "Add a passkey" (`#add-passkey`) registers one; on load it tells
//   the person's authenticators which passkeys shiny still accepts and the account's current name
//   (`signalAllAcceptedCredentials`, `signalCurrentUserDetails`);
// - the sign-in page: "Sign in with a passkey" (`#passkey-signin`), and conditional UI on the
//   user-name field (`autocomplete="username webauthn"`) where the browser offers it; a passkey
//   shiny does not know is reported (`signalUnknownCredential`).
//
// Outcomes are written to `#passkey-status` (tests read it). Compiled into shiny by SwiftPM
// (`.embedInCode`); checked by scripts/lint-browser-scripts.mjs.

"use strict";
(() => {
  const config = document.getElementById("passkey-config");
  if (!config || !window.PublicKeyCredential) return;
  const csrf = config.dataset.csrf;
  const status = document.getElementById("passkey-status");
  const say = (text) => { if (status) status.textContent = text; };

  async function call(path, body) {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body || {}),
      credentials: "same-origin",
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) throw Object.assign(new Error(answer.message || "shiny refused"), { answer });
    return answer;
  }

  // --- the account's passkeys ---
  const add = document.getElementById("add-passkey");
  if (add) {
    add.addEventListener("click", async () => {
      say("Follow your browser or password manager…");
      try {
        const options = await call("/passkeys/registration/options");
        const credential = await navigator.credentials.create({
          publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options),
        });
        await call("/passkeys/registration", { credential: credential.toJSON() });
        say("Passkey added.");
        location.reload();
      } catch (error) {
        say(`No passkey was added: ${error.message}`);
      }
    });
  }
  if (config.dataset.accepted !== undefined && config.dataset.userId) {
    const rpId = config.dataset.rpId;
    const userId = config.dataset.userId;
    const accepted = config.dataset.accepted ? config.dataset.accepted.split(",") : [];
    if (PublicKeyCredential.signalAllAcceptedCredentials) {
      PublicKeyCredential.signalAllAcceptedCredentials({ rpId, userId, allAcceptedCredentialIds: accepted }).catch(() => {});
    }
    if (PublicKeyCredential.signalCurrentUserDetails) {
      const name = config.dataset.userName;
      PublicKeyCredential.signalCurrentUserDetails({ rpId, userId, name, displayName: name }).catch(() => {});
    }
  }

  // --- signing in ---
  let conditional = null;

  async function signIn(mediation) {
    const options = await call("/passkeys/authentication/options");
    const request = { publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options) };
    if (mediation) {
      conditional = new AbortController();
      request.mediation = mediation;
      request.signal = conditional.signal;
    }
    const credential = await navigator.credentials.get(request);
    try {
      const done = await call("/passkeys/authentication", { credential: credential.toJSON() });
      location.assign(done.redirect);
    } catch (error) {
      if (error.answer && error.answer.error === "unknown_credential" && PublicKeyCredential.signalUnknownCredential) {
        await PublicKeyCredential.signalUnknownCredential({ rpId: options.rpId, credentialId: credential.id }).catch(() => {});
      }
      throw error;
    }
  }

  const button = document.getElementById("passkey-signin");
  if (button) {
    button.addEventListener("click", async () => {
      if (conditional) conditional.abort();
      say("Follow your browser or password manager…");
      try {
        await signIn(null);
      } catch (error) {
        say(`Not signed in: ${error.message}`);
      }
    });
    if (PublicKeyCredential.isConditionalMediationAvailable) {
      PublicKeyCredential.isConditionalMediationAvailable().then((available) => {
        if (available) signIn("conditional").catch(() => {});
      });
    }
  }
})();
