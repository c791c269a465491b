import Foundation
import KeyhavenApp
import Passkeys
import Synchronization
import Vault
import _KeyhavenSupport

/// The agent as a passkey authenticator (issue 16; docs/autofill-protocol.md §2.5). The browser
/// hands the extension a WebAuthn call and the caller's origin (Chromium's
/// `webAuthenticationProxy` reports the origin itself; Firefox's `sender.origin`); the extension
/// shows Keyhaven's chooser — that choice is the user presence — and asks here. User verification
/// is the agent's unlock: recent enough (``Configuration/verificationWindow``) or the master
/// password typed again in the chooser. A new passkey is in the vault before its answer leaves.
/// Who asks for a passkey, as the extension learned it from the browser: the calling frame's origin,
/// the top-level origin when the frame is cross-origin with an ancestor (WebAuthn's `crossOrigin`,
/// `topOrigin`), and whether the person made a gesture in Keyhaven's own UI for this call (user
/// presence). Read from a request's `origin`, `crossOrigin`, `topOrigin` and `userPresent`.
struct PasskeyCaller: Sendable, Hashable {
    var origin: String
    var topOrigin: String?
    var userPresent: Bool

    init(_ call: BrowserRequest.PasskeyCall) throws(AutoFillError) {
        origin = call.origin
        if call.crossOrigin == true {
            guard let top = call.topOrigin, !top.isEmpty else {
                throw AutoFillError(.badRequest, "topOrigin is missing for a cross-origin caller.")
            }
            topOrigin = top
        } else {
            topOrigin = nil
        }
        userPresent = call.userPresent == true
    }
}

extension AutoFillAgent {
    /// Whether the unlock vouches for the person now, or `masterPassword` (typed in the chooser)
    /// does; a correct one renews the window.
    func userVerified(masterPassword: String?) throws(AutoFillError) -> Bool {
        do {
            return try onSession { try $0.userVerified(masterPassword: masterPassword) }
        } catch let error as SessionError {
            throw AutoFillError(error)
        } catch {
            throw AutoFillError(.failed, "\(error)")
        }
    }

    /// What the chooser shows before anything is signed: for `create`, the account and whether it
    /// already has an excluded passkey here; for `get`, the passkeys that may answer (hidden ones
    /// never). Never a key.
    func passkeyChoices(_ call: BrowserRequest.PasskeyChoices) throws(AutoFillError) -> BrowserReply.PasskeyChoices {
        let (options, origin) = (call.first.options, call.first.origin)
        let vault = try vault()
        var choices: BrowserReply.PasskeyChoices
        let verificationAsked: String
        switch call.second.kind {
        case .create:
            let request = try passkeyCall { () throws(PasskeyError) in try CreationRequest(json: options) }
            let rpID = try passkeyCall { () throws(PasskeyError) in try Authenticator.rpID(request.rpID, origin: origin)
            }
            let stored = try stored(vault, rpID: rpID)
            choices = BrowserReply.PasskeyChoices(
                rpId: rpID,
                user: request.userName,
                displayName: request.userDisplayName,
                excluded: stored.contains { request.excludeCredentials.contains($0.credentialID) },
                verificationRequired: false
            )
            verificationAsked = request.userVerification
        case .get:
            let request = try passkeyCall { () throws(PasskeyError) in try AssertionRequest(json: options) }
            let rpID = try passkeyCall { () throws(PasskeyError) in try Authenticator.rpID(request.rpID, origin: origin)
            }
            let passkeys = try offered(vault, rpID: rpID, allow: request.allowCredentials).map { passkey in
                BrowserReply.PasskeyChoice(
                    credentialId: Base64URL.encode(passkey.credentialID),
                    user: passkey.userName,
                    displayName: passkey.userDisplayName
                )
            }
            choices = BrowserReply.PasskeyChoices(rpId: rpID, passkeys: passkeys, verificationRequired: false)
            verificationAsked = request.userVerification
        }
        let verified = try userVerified(masterPassword: nil)
        choices.verificationRequired = verificationAsked == "required" && !verified
        return choices
    }

    /// `passkey.register`: a new passkey for the page's creation options, stored, then answered
    /// (`RegistrationResponseJSON`). The person must have confirmed: with a gesture in Keyhaven's
    /// sheet (`userPresent`), or by the setting that allows the silent conditional create (then
    /// neither UP nor UV is set: nobody was asked).
    func registerPasskey(_ call: BrowserRequest.PasskeyRegister) throws(AutoFillError) -> BrowserReply.PasskeyResponse {
        let caller = try PasskeyCaller(call.first)
        let vault = try vault()
        guard call.second.confirmed == true else { throw AutoFillError(.userCanceled, "The person did not confirm.") }
        let request = try passkeyCall { () throws(PasskeyError) in try CreationRequest(json: call.first.options) }
        let rpID = try passkeyCall { () throws(PasskeyError) in
            try Authenticator.rpID(request.rpID, origin: caller.origin)
        }
        let existing = try stored(vault, rpID: rpID)
        // Verification is about the person making this call: none without presence.
        let verified = try caller.userPresent ? userVerified(masterPassword: call.second.masterPassword) : false
        let (credential, response) = try passkeyCall { () throws(PasskeyError) in
            try authenticator.register(
                request,
                origin: caller.origin,
                topOrigin: caller.topOrigin,
                existing: existing,
                userVerified: verified,
                userPresent: caller.userPresent
            )
        }
        try save([credential], in: vault, failure: "The passkey could not be saved")
        return BrowserReply.PasskeyResponse(responseJson: response)
    }

    /// `passkey.assert`: signs the page's challenge with the passkey the person chose — chose with a
    /// gesture in Keyhaven's own UI: an assertion is never made without user presence.
    func assertPasskey(_ call: BrowserRequest.PasskeyAssert) throws(AutoFillError) -> BrowserReply.PasskeyResponse {
        let caller = try PasskeyCaller(call.first)
        let vault = try vault()
        guard caller.userPresent else {
            throw AutoFillError(.userCanceled, "A passkey is used only after the person chooses it in Keyhaven.")
        }
        let origin = caller.origin
        let request = try passkeyCall { () throws(PasskeyError) in try AssertionRequest(json: call.first.options) }
        let rpID = try passkeyCall { () throws(PasskeyError) in try Authenticator.rpID(request.rpID, origin: origin) }
        guard let id = Base64URL.decode(call.second.credentialId),
            let passkey = try offered(vault, rpID: rpID, allow: request.allowCredentials).first(where: {
                $0.credentialID == id
            })
        else {
            throw AutoFillError(.credentialIdentityNotFound, "Keyhaven has no such passkey for \(rpID).")
        }
        let verified = try userVerified(masterPassword: call.second.masterPassword)
        let (updated, response) = try passkeyCall { () throws(PasskeyError) in
            try authenticator.authenticate(
                request,
                origin: origin,
                topOrigin: caller.topOrigin,
                credential: passkey,
                userVerified: verified,
                userPresent: true
            )
        }
        try save([updated], in: vault, failure: "The passkey's use could not be recorded")
        return BrowserReply.PasskeyResponse(responseJson: response)
    }

    /// `passkey.signal`: the site's WebAuthn signals (Level 3 §5.1.10), checked against the
    /// caller's origin. Hides — never deletes — what the site no longer knows, restores what it
    /// lists again, renames the account. Returns how many passkeys changed.
    func signalPasskeys(_ signal: BrowserRequest.PasskeySignal) throws(AutoFillError) -> BrowserReply.SignalApplied {
        let vault = try vault()
        let rpID = try passkeyCall { () throws(PasskeyError) in
            try Authenticator.rpID(signal.rpId, origin: signal.origin)
        }
        func bytes(_ name: String, _ text: String?) throws(AutoFillError) -> [UInt8] {
            guard let text, let value = Base64URL.decode(text) else {
                throw AutoFillError(.badRequest, "\(name) is missing or not base64url.")
            }
            return value
        }
        var changed: [PasskeyCredential] = []
        for var passkey in try stored(vault, rpID: rpID) {
            let before = passkey
            switch signal.kind {
            case .unknownCredential:
                if passkey.credentialID == (try bytes("credentialId", signal.credentialId)) { passkey.hidden = true }
            case .allAcceptedCredentials:
                guard passkey.userHandle == (try bytes("userId", signal.userId)) else { continue }
                guard let accepted = signal.allAcceptedCredentialIds else {
                    throw AutoFillError(.badRequest, "allAcceptedCredentialIds is missing.")
                }
                let ids = accepted.compactMap { Base64URL.decode($0) }
                passkey.hidden = !ids.contains(passkey.credentialID)
            case .currentUserDetails:
                guard passkey.userHandle == (try bytes("userId", signal.userId)) else { continue }
                if let name = signal.name { passkey.userName = name }
                if let displayName = signal.displayName { passkey.userDisplayName = displayName }
            }
            if passkey != before { changed.append(passkey) }
        }
        try save(changed, in: vault, failure: "The passkeys could not be updated")
        return BrowserReply.SignalApplied(changed: changed.count)
    }

    var authenticator: Authenticator {
        let randomness = configuration.randomness
        return Authenticator(now: configuration.now, randomBytes: { Array(randomness.bytes($0)) })
    }

    /// Saves `passkeys` and records the vault files as the agent's own write.
    func save(_ passkeys: [PasskeyCredential], in vault: Vault, failure: String) throws(AutoFillError) {
        guard !passkeys.isEmpty else { return }
        do {
            for passkey in passkeys { try vault.savePasskey(passkey) }
        } catch {
            throw AutoFillError(.failed, "\(failure): \(error.message)")
        }
        noteOwnWrite()
    }

    func stored(_ vault: Vault, rpID: String) throws(AutoFillError) -> [PasskeyCredential] {
        do {
            return try vault.passkeys(rpID: rpID)
        } catch {
            throw AutoFillError(.failed, "The passkeys could not be read: \(error.message)")
        }
    }

    /// The visible passkeys for `rpID` the site allows (any when `allow` is empty), most recently
    /// used first.
    func offered(_ vault: Vault, rpID: String, allow: [[UInt8]]) throws(AutoFillError) -> [PasskeyCredential] {
        try stored(vault, rpID: rpID)
            .filter { !$0.hidden && (allow.isEmpty || allow.contains($0.credentialID)) }
            .sorted { ($0.lastUsed ?? $0.created) > ($1.lastUsed ?? $1.created) }
    }

    /// Runs an authenticator step, turning its refusal into the protocol's error (the extension
    /// maps each code to the DOMException the page sees).
    func passkeyCall<T>(_ body: () throws(PasskeyError) -> T) throws(AutoFillError) -> T {
        do {
            return try body()
        } catch {
            switch error.code {
            case .excluded:
                throw AutoFillError(.matchedExcludedCredential, "This account already has a passkey in Keyhaven.")
            case .originNotAllowed: throw AutoFillError(.originNotAllowed, "Refused: \(error.message).")
            case .userVerificationRequired: throw AutoFillError(.userVerificationRequired, "Unlock Keyhaven again.")
            case .invalidRequest: throw AutoFillError(.badRequest, "The page's options are invalid: \(error.message).")
            default: throw AutoFillError(.failed, "The passkey could not be used: \(error.message).")
            }
        }
    }
}
