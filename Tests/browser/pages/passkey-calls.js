// Nothing here knows about Keyhaven: it is what any site does.
const bytes = (text) => new TextEncoder().encode(text);
const fromB64url = (text) => Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
window.outcome = null;
window.run = (kind, options) => {
  window.outcome = null;
  let call;
  if (kind === "create") {
    call = navigator.credentials.create({ publicKey: {
      rp: { id: location.hostname, name: "Plain page" },
      user: { id: bytes(options.userId), name: options.user, displayName: options.displayName },
      challenge: fromB64url(options.challenge),
      pubKeyCredParams: [{ type: "public-key", alg: -7 }, { type: "public-key", alg: -8 }],
      excludeCredentials: (options.exclude || []).map((id) => ({ type: "public-key", id: fromB64url(id) })),
      authenticatorSelection: { residentKey: "required", userVerification: options.userVerification || "preferred" },
      attestation: "none",
    } });
  } else if (kind === "conditional") {
    // Conditional UI: pending until the person picks a passkey from an AutoFill menu.
    call = navigator.credentials.get({ mediation: "conditional", publicKey: {
      challenge: fromB64url(options.challenge),
      userVerification: options.userVerification || "preferred",
    } });
  } else if (kind === "get") {
    call = navigator.credentials.get({ publicKey: {
      rpId: location.hostname,
      challenge: fromB64url(options.challenge),
      allowCredentials: (options.allow || []).map((id) => ({ type: "public-key", id: fromB64url(id) })),
      userVerification: options.userVerification || "preferred",
    } });
  } else {
    call = PublicKeyCredential[kind](options);
  }
  Promise.resolve(call).then(
    (credential) => {
      window.outcome = {
        ok: credential && credential.toJSON ? credential.toJSON() : true,
        isPublicKeyCredential: credential instanceof PublicKeyCredential,
        rawIdMatches: !!credential && credential.rawId instanceof ArrayBuffer && credential.id.length > 0,
      };
    },
    (error) => { window.outcome = { error: error.name, message: error.message }; }
  );
};
