import Crypto
import Foundation
import KeyhavenTesting
import Passkeys
import Vault
import VaultSync
import VaultSyncBridge

/// Random credentials from a seed, and a device syncing them sealed.
enum CredentialFixtures {
    /// A wall clock (milliseconds, 2033) after every date these fixtures make: a replica adopting
    /// them reads it as "now" (a date after "now" is stamped at it).
    static let later: UInt64 = 2_000_000_000_000

    static let texts = ["", "a", "é", "e\u{0301}", "🔑 clé", "Ünïcödé 日本語", "line\nbreak", " spaced ", "x"]

    static func text(_ generator: inout some RandomNumberGenerator, allowEmpty: Bool = true) -> String {
        let base = texts.randomElement(using: &generator)!
        let text = base + String(Int.random(in: 0..<1_000_000, using: &generator))
        return allowEmpty && Int.random(in: 0..<5, using: &generator) == 0 ? "" : text
    }

    /// A date to the millisecond (what stamps keep), after `after`.
    static func date(after: Date, _ generator: inout some RandomNumberGenerator) -> Date {
        let milliseconds =
            CredentialRecordMapping.milliseconds(after) + UInt64.random(in: 1...10_000_000, using: &generator)
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    static func bytes(_ count: Int, _ generator: inout some RandomNumberGenerator) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    static func passkey(_ generator: inout some RandomNumberGenerator, created: Date) -> PasskeyCredential {
        PasskeyCredential(
            rpID: "rp\(Int.random(in: 0..<1000, using: &generator)).example",
            credentialID: bytes(Int.random(in: 16...64, using: &generator), &generator),
            userHandle: bytes(Int.random(in: 0...64, using: &generator), &generator),
            userName: text(&generator),
            userDisplayName: text(&generator),
            algorithm: Bool.random(using: &generator) ? -7 : -8,
            privateKey: bytes(32, &generator),
            signCount: UInt32.random(in: 0...5, using: &generator),
            backupEligible: Bool.random(using: &generator),
            backedUp: Bool.random(using: &generator),
            // Passkey dates are exact (not stamps): a sub-millisecond one comes back as it was.
            created: created.addingTimeInterval(Double.random(in: 0..<1, using: &generator)),
            lastUsed: Bool.random(using: &generator) ? created.addingTimeInterval(12.345_678_9) : nil,
            hidden: Int.random(in: 0..<4, using: &generator) == 0
        )
    }

    /// A random credential: every field sometimes empty, sometimes unicode, long notes, several
    /// services, TOTP, folder, sign-in link, a password history of several entries, passkeys.
    static func credential(_ generator: inout some RandomNumberGenerator) -> SyncedCredential {
        let created = date(after: Date(timeIntervalSince1970: 1_600_000_000), &generator)
        var history: [PasswordHistoryEntry] = []
        var last = created
        for _ in 0..<Int.random(in: 0...4, using: &generator) {
            last = date(after: last, &generator)
            history.append(PasswordHistoryEntry(password: text(&generator), replaced: last))
        }
        let services = (0..<Int.random(in: 0...3, using: &generator)).map { index in
            index % 2 == 0
                ? ServiceIdentifier("https://s\(index).\(text(&generator, allowEmpty: false)).example/login")
                : ServiceIdentifier(kind: .domain, identifier: "d\(index).example")
        }
        let notes =
            Int.random(in: 0..<3, using: &generator) == 0
            ? String(repeating: text(&generator, allowEmpty: false) + " ", count: 400) : text(&generator)
        let content = CredentialContent(
            title: text(&generator),
            services: services,
            user: text(&generator),
            password: Int.random(in: 0..<6, using: &generator) == 0 ? nil : text(&generator),
            notes: notes,
            totp: Bool.random(using: &generator) ? "JBSWY3DPEHPK3PXP" : nil,
            folder: Bool.random(using: &generator) ? "Work/" + text(&generator) : nil,
            signIn: Bool.random(using: &generator)
                ? SignInLink(
                    issuer: "https://id.example",
                    subject: text(&generator),
                    linked: created.addingTimeInterval(0.123_456)
                ) : nil
        )
        let passkeys = (0..<Int.random(in: 0...2, using: &generator)).map { _ in passkey(&generator, created: created) }
        let deleted = Int.random(in: 0..<5, using: &generator) == 0 ? date(after: last, &generator) : nil
        return SyncedCredential(
            content: content,
            passwordHistory: history,
            passkeys: passkeys,
            created: created,
            deleted: deleted
        )
    }

    /// A sealing codec for one vault, keys and nonces from `seed`.
    static func codec(seed: UInt64) -> SealedPayloads<SeededRandomNumberGenerator> {
        var generator = SeededRandomNumberGenerator(seed: seed)
        let vaultKey = SymmetricKey(data: bytes(32, &generator))
        return SealedPayloads(
            sealer: ItemSealer(vaultKey: vaultKey, vault: VaultID(using: &generator)),
            generator: generator
        )
    }
}
