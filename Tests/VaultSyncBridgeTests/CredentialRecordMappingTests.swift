import Foundation
import KeyhavenTesting
import Passkeys
import Testing
import Vault
import VaultSync
import VaultSyncBridge

/// Credentials to records and back: every field, the password history with its dates, passkeys,
/// deletion; one encoding per value; what the mapping cannot read is a typed error.
struct CredentialRecordMappingTests {
    let item = ItemID(high: 28, low: 1)
    let device = DeviceID(0xA)

    /// credential → record → sealed payload → record → credential, for random credentials.
    @Test(arguments: 0..<60)
    func randomCredentialsComeBackEqualThroughSealedPayloads(seed: UInt64) throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        let credential = CredentialFixtures.credential(&generator)
        let record = try CredentialRecordMapping.record(for: credential, id: item, device: device)
        var codec = CredentialFixtures.codec(seed: seed)
        let payload = try codec.encode(record, version: 1)
        let opened = try codec.decode(payload, item: item, version: 1)
        #expect(opened.canonicalBytes == record.canonicalBytes)
        let back = try CredentialRecordMapping.credential(from: opened)
        #expect(back == credential)
        #expect(back.conflicts.isEmpty)
        #expect(record.isDeleted == (credential.deleted != nil))
        // Written again unchanged, nothing changes: each value has one encoding.
        var replica = SyncReplica(device: device)
        try replica.adopt(credential, as: item, now: CredentialFixtures.later)
        #expect(try !replica.write(credential.content, passkeys: credential.passkeys, to: item, now: 1))
        #expect(replica.records[item] == record)
    }

    @Test func emptyAndAbsentAreTheOneEncodingOfEachEmptyValue() throws {
        let values = try CredentialRecordMapping.fieldValues(
            of: CredentialContent(password: "", folder: ""),
            passkeys: [],
            item: item
        )
        #expect(values[.title] == .absent && values[.user] == .absent && values[.notes] == .absent)
        #expect(values[.services] == .absent && values[.signIn] == .absent && values[.totp] == .absent)
        // An empty password or folder is a value of its own, apart from none.
        #expect(values[.password] == .text("") && values[.folder] == .text(""))
    }

    @Test func aHistoryEntryEqualToTheNextPasswordIsKept() throws {
        let created = Date(timeIntervalSince1970: 1_700_000_000)
        let credential = SyncedCredential(
            content: CredentialContent(title: "Mail", password: "same"),
            passwordHistory: [
                PasswordHistoryEntry(password: "same", replaced: created.addingTimeInterval(1)),
                PasswordHistoryEntry(password: "same", replaced: created.addingTimeInterval(2)),
            ],
            created: created
        )
        let record = try CredentialRecordMapping.record(for: credential, id: item, device: device)
        #expect(try CredentialRecordMapping.credential(from: record) == credential)
        #expect(record.conflicts.isEmpty)
    }

    @Test func aPasswordChangeOnTheReplicaIsHistoryWithItsDate() throws {
        var replica = SyncReplica(device: device)
        let created = Date(timeIntervalSince1970: 1_700_000_000)
        try replica.adopt(
            SyncedCredential(content: CredentialContent(title: "Bank", password: "p0"), created: created),
            as: item,
            now: 1_700_000_000_000
        )
        let changed = CredentialContent(title: "Bank", password: "p1")
        #expect(try replica.write(changed, passkeys: [], to: item, now: 1_700_000_005_000))
        let credential = try replica.credential(item)
        #expect(credential.content == changed)
        #expect(
            credential.passwordHistory == [
                PasswordHistoryEntry(password: "p0", replaced: created.addingTimeInterval(5))
            ]
        )
        #expect(credential.created == created)
    }

    @Test func twoPasskeysWithOneIdentityAreRefused() throws {
        var generator = SeededRandomNumberGenerator(seed: 1)
        let passkey = CredentialFixtures.passkey(&generator, created: Date(timeIntervalSince1970: 1_700_000_000))
        var renamed = passkey
        renamed.userName = "someone else"
        #expect(throws: VaultSyncError(.duplicatePasskey, "")) {
            try CredentialRecordMapping.fieldValues(of: CredentialContent(), passkeys: [passkey, renamed], item: item)
        }
    }

    /// A record with `value` in `field` (written over "ok" when `inHistory`, so only history holds it).
    func record(_ field: FieldKey, _ value: FieldValue, inHistory: Bool = false) -> SyncRecord {
        var clock = HybridLogicalClock(device: device)
        var record = SyncRecord.created(id: item, values: [field: value], stamp: clock.send(now: 1))
        if inHistory {
            record.set(field, to: field == .services ? .list(["dok"]) : .text("ok"), stamp: clock.send(now: 2))
        }
        return record
    }

    @Test func whatTheMappingCannotReadIsATypedErrorNeverADroppedField() throws {
        var generator = SeededRandomNumberGenerator(seed: 2)
        let passkey = CredentialFixtures.passkey(&generator, created: Date(timeIntervalSince1970: 1_700_000_000))
        let name = CredentialField.passkeyName(passkey)
        let bytes = try #require(CredentialFieldValue.passkey(passkey).fieldValue.bytes)
        let other = CredentialFieldValue.passkey(CredentialFixtures.passkey(&generator, created: .now)).fieldValue
        let link = try #require(
            CredentialFieldValue.signIn(SignInLink(issuer: "i", subject: "s", linked: .now)).fieldValue.bytes
        )
        let unknown = VaultSyncError(.unknownField, "")
        let malformed = VaultSyncError(.malformedField, "")
        let cases: [(SyncRecord, VaultSyncError)] = [
            (record(FieldKey("nickname"), .text("x")), unknown),  // a newer Keyhaven's field
            (record(FieldKey("passkey/XYZ"), .bytes(bytes)), unknown),  // not a passkey name
            (record(.title, .text("")), malformed),  // "" is written as absent
            (record(.notes, .list(["a"])), malformed),  // the wrong kind
            (record(.password, .bytes([1])), malformed),
            (record(.services, .list([])), malformed),  // [] is written as absent
            (record(.services, .list(["xhttps://a.example"])), malformed),  // no such kind
            (record(.services, .text("a.example")), malformed),
            (record(.signIn, .bytes(link + [0])), malformed),  // a byte after the end
            (record(.signIn, .bytes(Array(link.dropLast()))), malformed),  // truncated
            (record(.signIn, .text("i")), malformed),
            (record(.passkey(name), other), malformed),  // another passkey under this one's name
            (record(.passkey(name), .bytes([1] + bytes.dropFirst().dropLast())), malformed),
            (record(.passkey(name), .bytes([2] + bytes.dropFirst())), VaultSyncError(.unsupportedFormat, "")),
            (record(.passkey(name), .text("x")), malformed),
            (record(.title, .list(["x"]), inHistory: true), malformed),  // only history holds it
            (record(.services, .list(["q"]), inHistory: true), malformed),
        ]
        for (record, expected) in cases {
            #expect(throws: expected, "\(record.fields.keys.map(\.name))") {
                try CredentialRecordMapping.credential(from: record)
            }
            // The message names the item, never a value.
            do {
                _ = try CredentialRecordMapping.credential(from: record)
            } catch {
                #expect(error.item == item)
                #expect(!error.message.contains(".example") && !error.message.contains("\u{1}"))
            }
        }
        // Flags other than 0 and 1, and a -0 or NaN date, are not the passkey's bytes either.
        let flagAt = bytes.count - 1
        var badFlag = bytes
        badFlag[flagAt] = 2
        #expect(throws: malformed) {
            try CredentialRecordMapping.credential(from: record(.passkey(name), .bytes(badFlag)))
        }
        var minusZero = link
        minusZero.replaceSubrange((link.count - 8)..., with: (-0.0 as Double).bitPattern.bigEndianBytes)
        #expect(throws: malformed) { try CredentialRecordMapping.credential(from: record(.signIn, .bytes(minusZero))) }
        var nan = link
        nan.replaceSubrange((link.count - 8)..., with: Double.nan.bitPattern.bigEndianBytes)
        #expect(throws: malformed) { try CredentialRecordMapping.credential(from: record(.signIn, .bytes(nan))) }
    }
}

extension FieldValue {
    var bytes: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        return nil
    }
}

extension UInt64 {
    var bigEndianBytes: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: self >> (56 - 8 * UInt64($0))) } }
}
