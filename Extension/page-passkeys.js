// Runs in the page's own world at document_start: wraps the WebAuthn signal methods
// (PublicKeyCredential.signalUnknownCredential, signalAllAcceptedCredentials,
// signalCurrentUserDetails) so that Keyhaven hears them too — the browser's own call still runs
// and its result is what the page gets. Only the signal's own fields cross, as plain strings.
(() => {
  "use strict";
  const PKC = window.PublicKeyCredential;
  if (!PKC || PKC.__keyhaven) return;
  Object.defineProperty(PKC, "__keyhaven", { value: true });
  const fields = {
    signalUnknownCredential: ["unknownCredential", ["rpId", "credentialId"]],
    signalAllAcceptedCredentials: ["allAcceptedCredentials", ["rpId", "userId", "allAcceptedCredentialIds"]],
    signalCurrentUserDetails: ["currentUserDetails", ["rpId", "userId", "name", "displayName"]],
  };
  const target = window.location.origin === "null" ? "*" : window.location.origin;
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
})();
