// Runs in the page's own world at document_start.
//
// Signals (every browser): wraps PublicKeyCredential.signalUnknownCredential,
// signalAllAcceptedCredentials and signalCurrentUserDetails so that Keyhaven hears them too — the
// browser's own call still runs and its result is what the page gets. Only the signal's own fields
// cross, as plain strings.
//
// create()/get() (Firefox, which has no webAuthenticationProxy): navigator.credentials.create/get
// with `publicKey` ask Keyhaven first, through relay.js and the background (which adds the origin
// the browser gives the frame). Keyhaven's sheet appears in the page; its answer comes back as a
// PublicKeyCredential-shaped object. When Keyhaven is locked, off or unpaired, or the person chooses
// "another device", the browser's own create()/get() runs with the very same options.
//
// Conditional get (every browser): offered in Keyhaven's AutoFill menu next to the browser's own.
// Conditional create (every browser): answered silently right after Keyhaven filled the account's
// password, only when the person turned that on in the popup.
(() => {
  "use strict";
  const PKC = window.PublicKeyCredential;
  if (!PKC || PKC.__keyhaven) return;
  Object.defineProperty(PKC, "__keyhaven", { value: true });
  const target = window.location.origin === "null" ? "*" : window.location.origin;

  // --- signals ---
  const fields = {
    signalUnknownCredential: ["unknownCredential", ["rpId", "credentialId"]],
    signalAllAcceptedCredentials: ["allAcceptedCredentials", ["rpId", "userId", "allAcceptedCredentialIds"]],
    signalCurrentUserDetails: ["currentUserDetails", ["rpId", "userId", "name", "displayName"]],
  };
  for (const [method, [kind, names]] of Object.entries(fields)) {
    const original = PKC[method];
    if (typeof original !== "function") continue;
    PKC[method] = function (options) {
      const result = original.call(this, options);
      const signal = { kind };
      for (const name of names) {
        const value = options?.[name];
        if (typeof value === "string") signal[name] = value;
        else if (Array.isArray(value)) signal[name] = value.filter((item) => typeof item === "string");
      }
      const tell = () => window.postMessage({ __keyhaven: "passkey.signal", signal }, target);
      Promise.resolve(result).then(tell, tell);
      return result;
    };
  }

  // --- create()/get() ---
  if (!navigator.credentials) return;
  const firefox = navigator.userAgent.includes("Firefox");
  const container = navigator.credentials;
  const originalCreate = container.create.bind(container);
  const originalGet = container.get.bind(container);

  const b64 = (source) => {
    const bytes = source instanceof ArrayBuffer ? new Uint8Array(source) : new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
    let text = "";
    for (const byte of bytes) text += String.fromCharCode(byte);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  };
  const buffer = (text) => {
    const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0)).buffer;
  };
  const descriptors = (list) => (list || []).map((d) => ({ type: d.type, id: b64(d.id), transports: d.transports }));

  function creationJSON(o) {
    return {
      rp: { id: o.rp?.id, name: o.rp?.name },
      user: { id: b64(o.user.id), name: o.user.name, displayName: o.user.displayName },
      challenge: b64(o.challenge),
      pubKeyCredParams: o.pubKeyCredParams,
      timeout: o.timeout,
      excludeCredentials: descriptors(o.excludeCredentials),
      authenticatorSelection: o.authenticatorSelection,
      attestation: o.attestation,
    };
  }

  function requestJSON(o) {
    return {
      rpId: o.rpId,
      challenge: b64(o.challenge),
      timeout: o.timeout,
      allowCredentials: descriptors(o.allowCredentials),
      userVerification: o.userVerification,
    };
  }

  /** A PublicKeyCredential-shaped object for Keyhaven's answer (WebAuthn's JSON). */
  function credential(json, kind) {
    const r = json.response;
    const response =
      kind === "create"
        ? {
            clientDataJSON: buffer(r.clientDataJSON),
            attestationObject: buffer(r.attestationObject),
            getAuthenticatorData: () => buffer(r.authenticatorData),
            getPublicKey: () => (r.publicKey ? buffer(r.publicKey) : null),
            getPublicKeyAlgorithm: () => r.publicKeyAlgorithm,
            getTransports: () => r.transports || [],
          }
        : {
            clientDataJSON: buffer(r.clientDataJSON),
            authenticatorData: buffer(r.authenticatorData),
            signature: buffer(r.signature),
            userHandle: r.userHandle ? buffer(r.userHandle) : null,
          };
    const responseType = kind === "create" ? window.AuthenticatorAttestationResponse : window.AuthenticatorAssertionResponse;
    if (responseType) Object.setPrototypeOf(response, responseType.prototype);
    const made = {};
    Object.setPrototypeOf(made, PKC.prototype);
    const own = {
      id: json.id,
      rawId: buffer(json.rawId),
      type: json.type,
      authenticatorAttachment: json.authenticatorAttachment,
      response,
      getClientExtensionResults: () => json.clientExtensionResults || {},
      toJSON: () => json,
    };
    for (const [name, value] of Object.entries(own)) Object.defineProperty(made, name, { value, enumerable: true });
    for (const [name, value] of Object.entries(response)) Object.defineProperty(response, name, { value, enumerable: true });
    return made;
  }

  let next = 0;
  const waiting = new Map();
  window.addEventListener("message", (event) => {
    if (event.source !== window || !event.data || event.data.__keyhaven !== "passkey.reply") return;
    const resolve = waiting.get(event.data.id);
    waiting.delete(event.data.id);
    if (resolve) resolve(event.data);
  });

  /** Posts `message` (with a fresh id) to relay.js and waits for the reply with that id. */
  function askKeyhaven(message) {
    return new Promise((resolve) => {
      const id = `${Date.now()}-${++next}`;
      waiting.set(id, resolve);
      window.postMessage({ ...message, id }, target);
    });
  }

  function wrap(kind, original, toJSON) {
    return async function (options) {
      if (!options || !options.publicKey || options.mediation === "conditional") return original(options);
      let json;
      try {
        json = toJSON(options.publicKey);
      } catch {
        return original(options);
      }
      const reply = await askKeyhaven({ __keyhaven: "passkey.call", kind, options: json });
      if (reply.fallback) return original(options);
      if (reply.error) throw new DOMException(reply.error.message || "Keyhaven refused.", reply.error.name || "NotAllowedError");
      return credential(reply.responseJson, kind);
    };
  }
  // Conditional mediation (both browsers; Chromium's proxy never sees these): Keyhaven offers its
  // passkeys in its own AutoFill menu on `autocomplete="username webauthn"` fields while the
  // browser's own conditional request runs too — whichever the person uses answers, the other is
  // withdrawn. Only the page's own abort ends it otherwise.
  function conditionalGet(options) {
    let json;
    try {
      json = requestJSON(options.publicKey);
    } catch {
      return originalGet(options);
    }
    const id = `${Date.now()}-${++next}`;
    const browserAbort = new AbortController();
    const pageSignal = options.signal;
    const withdraw = () => window.postMessage({ __keyhaven: "passkey.conditional.withdraw", id }, target);
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (outcome) => {
        if (settled) return;
        settled = true;
        waiting.delete(id);
        outcome();
      };
      if (pageSignal) {
        if (pageSignal.aborted) return reject(pageSignal.reason ?? new DOMException("Aborted", "AbortError"));
        pageSignal.addEventListener("abort", () => {
          browserAbort.abort(pageSignal.reason);
          withdraw();
          finish(() => reject(pageSignal.reason ?? new DOMException("Aborted", "AbortError")));
        });
      }
      waiting.set(id, (reply) => {
        if (!reply.responseJson) return;
        browserAbort.abort();
        finish(() => resolve(credential(reply.responseJson, "get")));
      });
      window.postMessage({ __keyhaven: "passkey.conditional", id, options: json }, target);
      originalGet({ ...options, signal: browserAbort.signal }).then(
        (made) => {
          withdraw();
          finish(() => resolve(made));
        },
        () => {} // the browser withdrew (or had nothing): Keyhaven's offer stands until the page aborts
      );
    });
  }

  // Conditional create (every browser): after Keyhaven filled this account's password, and only when
  // the person allowed it, Keyhaven makes the passkey without asking; otherwise the browser's own.
  async function conditionalCreate(options) {
    let json;
    try {
      json = creationJSON(options.publicKey);
    } catch {
      return originalCreate(options);
    }
    const reply = await askKeyhaven({ __keyhaven: "passkey.conditionalCreate", options: json });
    if (!reply.responseJson) return originalCreate(options);
    return credential(reply.responseJson, "create");
  }

  const modalGet = firefox ? wrap("get", originalGet, requestJSON) : originalGet;
  const modalCreate = firefox ? wrap("create", originalCreate, creationJSON) : originalCreate;
  container.create = function (options) {
    if (options && options.publicKey && options.mediation === "conditional") return conditionalCreate(options);
    return modalCreate(options);
  };
  container.get = function (options) {
    if (options && options.publicKey && options.mediation === "conditional") return conditionalGet(options);
    return modalGet(options);
  };
})();
