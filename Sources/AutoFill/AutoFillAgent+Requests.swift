import Foundation
import KeyhavenApp
import OneTimeCodes
import PasswordRules
import Synchronization
import Vault
public import _KeyhavenSupport

extension AutoFillAgent {
    /// Answers one request of an open session (docs/autofill-protocol.md §2.4): the reply object
    /// with the request's `id` and `ok` or `error`.
    public func handle(_ request: JSONValue, pairingId: String) -> JSONValue {
        let id = request["id"] ?? .null
        let started = now
        do throws(AutoFillError) {
            guard isPaired(pairingId) else {
                throw AutoFillError(.notPaired, "This browser's pairing was revoked: pair it again.")
            }
            let ok = try answer(request, pairingId: pairingId, started: started)
            return ["v": 1, "id": id, "ok": ok]
        } catch {
            return ["v": 1, "id": id, "error": error.json]
        }
    }

    func answer(_ request: JSONValue, pairingId: String, started: Date) throws(AutoFillError) -> JSONValue {
        guard let type = request["type"]?.string else { throw AutoFillError(.badRequest, "type is missing.") }
        func field(_ name: String) throws(AutoFillError) -> String {
            guard let value = request[name]?.string, !value.isEmpty else {
                throw AutoFillError(.badRequest, "\(name) is missing.")
            }
            return value
        }
        switch type {
        case "state":
            let status = onSession { $0.status() }
            return [
                "state": .string(status.unlocked ? "unlocked" : "locked"),
                "revision": .number(Double(status.revision)),
                "supportsIncrementalUpdates": true,
            ]
        case "unlock":
            try unlock(masterPassword: try field("masterPassword"))
            return ["state": "unlocked"]
        case "lock":
            lock()
            return ["state": "locked"]
        case "identities.query":
            _ = try vault()
            var kinds: Set<CredentialIdentity.Kind> = [.password, .oneTimeCode]
            if let asked = request["kinds"]?.array {
                kinds = Set(asked.compactMap { $0.string.flatMap(CredentialIdentity.Kind.init(rawValue:)) })
            }
            let url = try field("url")
            let (identities, revision) = try queryIdentities(url: url, kinds: kinds)
            return ["revision": .number(Double(revision)), "identities": .array(identities.map(\.json))]
        case "credentialList":
            _ = try vault()
            let url = try field("url")
            // Every account name in the vault: only for a page the person could fill silently
            // (https or loopback, same site as its top page). The extension asks only from its own
            // chooser page, which the page cannot script.
            let (frame, _) = try IdentityIndex.frame(url)
            guard frame.isPotentiallyTrustworthy,
                let top = ServiceOrigin.of(url: request["topURL"]?.string ?? ""), Self.sameSite(frame, top)
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
            return ["identities": .array((matching + others).map(\.json))]
        case "credential.provideWithoutUserInteraction", "credential.prepareInterface":
            let confirmed = type == "credential.prepareInterface" && request["confirmed"]?.bool == true
            if type == "credential.prepareInterface", !confirmed {
                throw AutoFillError(.userCanceled, "The person did not confirm.")
            }
            let deadline = (request["deadlineMs"]?.number ?? 2000) / 1000
            let credential = try provide(
                record: try field("recordIdentifier"),
                url: try field("url"),
                topURL: request["topURL"]?.string ?? "",
                confirmed: confirmed,
                fromCredentialList: request["fromCredentialList"]?.bool == true
            )
            if !confirmed, now.timeIntervalSince(started) > deadline {
                throw AutoFillError(.userInteractionRequired, "The credential took longer than the deadline.")
            }
            return ["credential": ["user": .string(credential.user), "password": .string(credential.password ?? "")]]
        case "oneTimeCode.provide":
            let credential = try provide(
                record: try field("recordIdentifier"),
                url: try field("url"),
                topURL: request["topURL"]?.string ?? "",
                confirmed: request["confirmed"]?.bool == true
            )
            guard let secret = credential.totp, let totp = try? TOTP(secret: secret) else {
                throw AutoFillError(.credentialIdentityNotFound, "The credential has no one-time code.")
            }
            let at = now
            let validUntil = at.addingTimeInterval(TimeInterval(totp.secondsRemaining(at: at)))
            return [
                "code": .string(totp.code(at: at)),
                "validUntil": .string(ISO8601DateFormatter().string(from: validUntil)),
            ]
        case "credential.save":
            return try save(url: try field("url"), user: request["user"]?.string ?? "", password: try field("password"))
        case "password.generate":
            return try generate(url: try field("url"), rules: request["passwordRules"]?.string)
        case "passkey.choices":
            return try passkeyChoices(
                kind: try field("kind"),
                options: request["options"] ?? .null,
                origin: try field("origin")
            )
        case "passkey.register":
            return try registerPasskey(
                options: request["options"] ?? .null,
                caller: try PasskeyCaller(request, origin: try field("origin")),
                confirmed: request["confirmed"]?.bool == true,
                masterPassword: request["masterPassword"]?.string
            )
        case "passkey.assert":
            return try assertPasskey(
                options: request["options"] ?? .null,
                caller: try PasskeyCaller(request, origin: try field("origin")),
                credentialID: try field("credentialId"),
                masterPassword: request["masterPassword"]?.string
            )
        case "verify":
            // The person typed the master password again (Keyhaven's own page): passkey calls
            // count as verified for the next window.
            _ = try userVerified(masterPassword: try field("masterPassword"))
            return ["verified": true]
        case "passkey.signal":
            return try signalPasskeys(request, origin: try field("origin"))
        default:
            throw AutoFillError(.badRequest, "Unknown request type \(type).")
        }
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
    func save(url: String, user: String, password: String) throws(AutoFillError) -> JSONValue {
        let vault = try self.vault()
        let (frame, _) = try IdentityIndex.frame(url)
        let existing = try queryIdentities(url: url, kinds: [.password]).0
            .first { $0.user == user && ($0.match == .exact) }
        let action: String
        let record: CredentialID
        do {
            if let existing, let id = CredentialID(rawValue: existing.recordIdentifier) {
                let current = try vault.credential(id)
                if current.password == password {
                    return ["recordIdentifier": .string(id.rawValue), "action": "unchanged"]
                }
                try vault.update(id) { $0.password = password }
                record = id
                action = "updated"
            } else {
                record = try vault.add(
                    CredentialContent(
                        title: frame.host,
                        services: [ServiceIdentifier(kind: .url, identifier: frame.serialized)],
                        user: user,
                        password: password
                    )
                )
                action = "saved"
            }
        } catch {
            throw AutoFillError(.failed, "The credential could not be saved: \(error.message)")
        }
        noteOwnWrite()
        guard let saved = try? vault.credential(record) else {
            return ["recordIdentifier": .string(record.rawValue), "action": .string(action)]
        }
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
        broadcast(
            [
                "event": "identities.changed", "revision": .number(Double(revision)), "saved": [identity.json],
                "removed": [],
            ]
        )
        return ["recordIdentifier": .string(record.rawValue), "action": .string(action)]
    }

    /// `password.generate`: the field's `passwordrules`, else the site's Apple quirk, else Apple's format.
    func generate(url: String, rules fieldRules: String?) throws(AutoFillError) -> JSONValue {
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
        let source: String
        switch rules.source {
        case .service: source = "field"
        case .quirk: source = "quirk"
        case .appleFormat: source = "default"
        }
        return ["password": .string(password), "rules": .string(rules.ruleText ?? ""), "source": .string(source)]
    }
}
