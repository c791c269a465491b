public import Foundation
import KeyhavenApp
import OneTimeCodes
import PasswordRules
import Synchronization
import Vault
public import _KeyhavenSupport

extension AutoFillAgent {
    /// Answers one sealed frame's plaintext (docs/autofill-protocol.md §2.4): the reply object with
    /// the request's `id` and `ok` or `error`.
    public func handle(_ plaintext: Data, pairingId: String) -> JSONValue {
        handle(BrowserSealedMessage.read(plaintext), pairingId: pairingId)
    }

    /// Answers a request given as a JSON value (as the extension would send it).
    public func handle(_ request: JSONValue, pairingId: String) -> JSONValue {
        handle(request.encoded(), pairingId: pairingId)
    }

    /// Answers a decoded message: a revoked pairing is refused before anything of the request.
    public func handle(_ message: BrowserSealedMessage, pairingId: String) -> JSONValue {
        let started = now
        do throws(AutoFillError) {
            guard isPaired(pairingId) else {
                throw AutoFillError(.notPaired, "This browser's pairing was revoked: pair it again.")
            }
            let request = try message.request.get()
            let ok = try answer(request, started: started)
            assert(
                ObjectIdentifier(type(of: ok)) == ObjectIdentifier(request.kind.replyType),
                "\(request.kind.rawValue) answered with \(type(of: ok)), not its replyType"
            )
            return BrowserReply.json(id: message.id, .success(ok))
        } catch {
            return BrowserReply.json(id: message.id, .failure(error))
        }
    }

    func answer(_ request: BrowserRequest, started: Date) throws(AutoFillError) -> any BrowserProtocolObject {
        switch request {
        case .state:
            let status = onSession { $0.status() }
            return BrowserReply.State(
                state: status.unlocked ? .unlocked : .locked,
                revision: status.revision,
                supportsIncrementalUpdates: true
            )
        case .unlock(let request):
            try unlock(masterPassword: request.masterPassword)
            return BrowserReply.State(state: .unlocked)
        case .lock:
            lock()
            return BrowserReply.State(state: .locked)
        case .identitiesQuery(let request):
            _ = try vault()
            let kinds = request.second.kinds.map(Set.init) ?? [.password, .oneTimeCode]
            let (identities, revision) = try queryIdentities(url: request.first.url, kinds: kinds)
            return BrowserReply.Identities(revision: revision, identities: identities)
        case .credentialList(let request):
            return BrowserReply.Identities(identities: try credentialList(url: request.url, topURL: request.topURL))
        case .provideWithoutUserInteraction(let request):
            return try provide(request, confirmed: false, started: started)
        case .prepareInterface(let request):
            guard request.first.confirmed == true else {
                throw AutoFillError(.userCanceled, "The person did not confirm.")
            }
            return try provide(request, confirmed: true, started: started)
        case .oneTimeCode(let request):
            let credential = try provide(
                record: request.recordIdentifier,
                url: request.url,
                topURL: request.topURL ?? "",
                confirmed: request.confirmed == true
            )
            guard let secret = credential.totp, let totp = try? TOTP(secret: secret) else {
                throw AutoFillError(.credentialIdentityNotFound, "The credential has no one-time code.")
            }
            let at = now
            let validUntil = at.addingTimeInterval(TimeInterval(totp.secondsRemaining(at: at)))
            return BrowserReply.OneTimeCode(
                code: totp.code(at: at),
                validUntil: ISO8601DateFormatter().string(from: validUntil)
            )
        case .save(let request):
            return try save(url: request.url, user: request.user ?? "", password: request.password)
        case .generatePassword(let request):
            return try generate(url: request.url, rules: request.passwordRules)
        case .passkeyChoices(let request):
            return try passkeyChoices(request)
        case .passkeyRegister(let request):
            return try registerPasskey(request)
        case .passkeyAssert(let request):
            return try assertPasskey(request)
        case .verify(let request):
            // The person typed the master password again (Keyhaven's own page): passkey calls
            // count as verified for the next window.
            _ = try userVerified(masterPassword: request.masterPassword)
            return BrowserReply.Verified(verified: true)
        case .passkeySignal(let signal):
            return try signalPasskeys(signal)
        }
    }

    /// `credential.provideWithoutUserInteraction` and `credential.prepareInterface`: the credential,
    /// unless an unconfirmed one took longer than the extension's deadline.
    func provide(
        _ request: BrowserRequest.Provide,
        confirmed: Bool,
        started: Date
    ) throws(AutoFillError) -> BrowserReply.ProvidedCredential {
        let deadline = (request.second.deadlineMs ?? 2000) / 1000
        let credential = try provide(
            record: request.first.recordIdentifier,
            url: request.first.url,
            topURL: request.first.topURL ?? "",
            confirmed: confirmed,
            fromCredentialList: request.second.fromCredentialList == true
        )
        if !confirmed, now.timeIntervalSince(started) > deadline {
            throw AutoFillError(.userInteractionRequired, "The credential took longer than the deadline.")
        }
        return BrowserReply.ProvidedCredential(
            credential: .init(user: credential.user, password: credential.password ?? "")
        )
    }

    /// `credentialList`: every account name in the vault, only for a page the person could fill
    /// silently (https or loopback, same site as its top page). The extension asks only from its
    /// own chooser page, which the page cannot script. The frame's matches come first.
    func credentialList(url: String, topURL: String?) throws(AutoFillError) -> [CredentialIdentity] {
        _ = try vault()
        let (frame, _) = try IdentityIndex.frame(url)
        guard frame.isPotentiallyTrustworthy, let top = ServiceOrigin.of(url: topURL ?? ""), Self.sameSite(frame, top)
        else {
            throw AutoFillError(
                .userInteractionRequired,
                "Other passwords are offered only on a secure page that is not framed by another site."
            )
        }
        let (matching, _) = try queryIdentities(url: url, kinds: [.password])
        let others = state.withLock { state in
            state.index.entries.values.filter { entry in
                entry.hasPassword && !matching.contains { $0.recordIdentifier == entry.id.rawValue }
            }
            .sorted { ($0.user, $0.id.rawValue) < ($1.user, $1.id.rawValue) }
            .map {
                CredentialIdentity(
                    recordIdentifier: $0.id.rawValue,
                    kind: .password,
                    user: $0.user,
                    serviceIdentifier: $0.services.first?.identifier ?? "",
                    rank: state.index.rank($0),
                    match: nil
                )
            }
        }
        return matching + others
    }

    func queryIdentities(
        url: String,
        kinds: Set<CredentialIdentity.Kind>
    ) throws(AutoFillError)
        -> ([CredentialIdentity], Int)
    {
        _ = try vault()  // counts as activity; the identities are read again when the vault changed
        let (index, revision) = state.withLock { ($0.index, $0.indexRevision) }
        return (try index.query(url: url, kinds: kinds), revision)
    }

    /// A credential for the frame at `url` under the fill policy (§3): it must match the frame;
    /// without `confirmed`, only an exact or parent match in a frame same-site with its top page,
    /// on https or loopback.
    func provide(
        record: String,
        url: String,
        topURL: String,
        confirmed: Bool,
        fromCredentialList: Bool = false
    ) throws(AutoFillError) -> Credential {
        let vault = try self.vault()
        guard let id = CredentialID(rawValue: record) else {
            throw AutoFillError(.credentialIdentityNotFound, "No such credential for this page.")
        }
        let match = try state.withLock { state throws(AutoFillError) in try state.index.match(id, url: url) }
        // Apple's "Other passwords…": a credential the person picked from the whole list and
        // confirmed for this page may be another site's; nothing else ever is.
        let pickedFromList =
            confirmed && fromCredentialList && state.withLock { $0.index.entries[id]?.hasPassword == true }
        guard let (tier, _) = match ?? (pickedFromList ? (.sharedBackend, ServiceIdentifier("")) : nil) else {
            throw AutoFillError(.credentialIdentityNotFound, "No such credential for this page.")
        }
        if !confirmed {
            let (frame, _) = try IdentityIndex.frame(url)
            guard tier == .exact || tier == .parent else {
                throw AutoFillError(.userInteractionRequired, "The credential is for a related site: ask first.")
            }
            guard frame.isPotentiallyTrustworthy else {
                throw AutoFillError(.userInteractionRequired, "The page is not secure (http): ask first.")
            }
            guard let top = ServiceOrigin.of(url: topURL), Self.sameSite(frame, top) else {
                throw AutoFillError(
                    .userInteractionRequired,
                    "The sign-in form is in a frame of another site: ask first."
                )
            }
        }
        let credential: Credential
        do {
            credential = try vault.credential(id)
        } catch {
            throw AutoFillError(.credentialIdentityNotFound, "The credential could not be read.")
        }
        state.withLock { $0.index.lastUsed[id] = now }
        return credential
    }

    /// Same site: same scheme and registrable domain (an IP or `localhost` by host).
    static func sameSite(_ a: ServiceOrigin, _ b: ServiceOrigin) -> Bool {
        guard a.scheme == b.scheme else { return false }
        if let site = a.registrableDomain { return site == b.registrableDomain }
        return a.host == b.host
    }

    /// `credential.save`: a new credential for the frame's origin, or a new password for the one
    /// with that user (its old password goes to the history).
    func save(url: String, user: String, password: String) throws(AutoFillError) -> BrowserReply.Saved {
        let vault = try self.vault()
        let (frame, _) = try IdentityIndex.frame(url)
        let existing = try queryIdentities(url: url, kinds: [.password]).0
            .first { $0.user == user && ($0.match == .exact) }
        let action: BrowserReply.Saved.Action
        let record: CredentialID
        do {
            if let existing, let id = CredentialID(rawValue: existing.recordIdentifier) {
                let current = try vault.credential(id)
                if current.password == password {
                    return BrowserReply.Saved(recordIdentifier: id.rawValue, action: .unchanged)
                }
                try vault.update(id) { $0.password = password }
                record = id
                action = .updated
            } else {
                record = try vault.add(
                    CredentialContent(
                        title: frame.host,
                        services: [ServiceIdentifier(kind: .url, identifier: frame.serialized)],
                        user: user,
                        password: password
                    )
                )
                action = .saved
            }
        } catch {
            throw AutoFillError(.failed, "The credential could not be saved: \(error.message)")
        }
        noteOwnWrite()
        let answer = BrowserReply.Saved(recordIdentifier: record.rawValue, action: action)
        guard let saved = try? vault.credential(record) else { return answer }
        let (revision, identity) = state.withLock { state in
            state.index.insert(saved)
            let entry = state.index.entries[record]
            let identity = CredentialIdentity(
                recordIdentifier: record.rawValue,
                kind: .password,
                user: user,
                serviceIdentifier: saved.services.first?.identifier ?? "",
                rank: entry.map { state.index.rank($0) } ?? 0,
                match: nil
            )
            return (state.indexRevision, identity)
        }
        broadcast(.identitiesChanged(.init(revision: revision, saved: [identity], removed: [])))
        return answer
    }

    /// `password.generate`: the field's `passwordrules`, else the site's Apple quirk, else Apple's format.
    func generate(url: String, rules fieldRules: String?) throws(AutoFillError) -> BrowserReply.GeneratedPassword {
        touch()
        let (frame, _) = try IdentityIndex.frame(url)
        let domains = [frame.host] + (frame.registrableDomain.map { [$0] } ?? [])
        let rules = ServicePasswordRules(requirements: fieldRules, domains: domains)
        let password: String
        do {
            password = try rules.generate()
        } catch {
            throw AutoFillError(.failed, "No password satisfies these rules: \(error)")
        }
        let source: BrowserReply.GeneratedPassword.Source =
            switch rules.source {
            case .service: .field
            case .quirk: .quirk
            case .appleFormat: .default
            }
        return BrowserReply.GeneratedPassword(password: password, rules: rules.ruleText ?? "", source: source)
    }
}
