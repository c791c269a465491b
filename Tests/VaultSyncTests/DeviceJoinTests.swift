import Crypto
import Foundation
import KeyhavenTesting
import Testing
import VaultSync
import _KeyhavenSupport

/// The join code and the join's MACs and grant (docs/sync.md "A device joins"): what lets a new
/// device receive the sync vault key through a server that can neither open it nor put its own
/// key in between.
struct DeviceJoinTests {
    static let origin = ServiceOrigin("https://sync.example.org")!

    static func fields(_ code: JoinCode, agreement: Curve25519.KeyAgreement.PrivateKey) -> JoinRequestFields {
        JoinRequestFields(
            origin: origin,
            lookup: code.lookup,
            publicKey: Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation),
            agreementKey: Array(agreement.publicKey.rawRepresentation),
            name: "phone"
        )
    }

    static func grant() -> JoinGrant {
        var generator = SeededRandomNumberGenerator(seed: 3)
        return JoinGrant(
            account: "0123456789abcdef0123456789abcdef",
            approver: "fedcba9876543210fedcba9876543210",
            approval: Array(repeating: 7, count: 64),
            vaultKey: SymmetricKey(data: Array(repeating: 9, count: 32)),
            vaultID: VaultID(using: &generator)
        )
    }

    @Test func codesRoundTripThroughTheirTextAsPeopleTypeThem() throws {
        var generator = SeededRandomNumberGenerator(seed: 28)
        for _ in 0..<200 {
            let code = JoinCode(using: &generator)
            let text = code.text
            #expect(text.count == 19 && text.split(separator: "-").map(\.count) == [4, 4, 4, 4])
            #expect(try JoinCode(parsing: text) == code)
            #expect(try JoinCode(parsing: text.lowercased()) == code)
            #expect(try JoinCode(parsing: text.replacingOccurrences(of: "-", with: " ")) == code)
            #expect(try JoinCode(parsing: text.replacingOccurrences(of: "-", with: "")) == code)
            let confusable = text.replacingOccurrences(of: "0", with: "O").replacingOccurrences(of: "1", with: "l")
            #expect(try JoinCode(parsing: confusable) == code)
        }
    }

    @Test func typosAreRefusedWithAClearError() {
        for (text, says) in [
            ("K7QM-2XPA-9FRT-4HD", "this one has 15"),
            ("K7QM-2XPA-9FRT-4HDWX", "this one has 17"),
            ("", "this one has 0"),
            ("K7QM-2XPA-9FRT-4HDU", "character 16 is not a letter or digit of a join code (U is never one)"),
            ("K7QM-2XPA-9FRT-4HD!", "character 16 is not"),
            ("K7QM-2XPÄ-9FRT-4HDW", "character 8 is not"),
        ] {
            do {
                _ = try JoinCode(parsing: text)
                Issue.record("\(text) is refused")
            } catch {
                #expect(error.code == .invalidJoinCode)
                #expect(error.message.contains(says), "\(error.message)")
                // Only a U is told that U is never one.
                #expect(error.message.contains("U is never one") == text.hasSuffix("U"), "\(error.message)")
                #expect(error.message.contains("type the code the new device shows"))
            }
        }
    }

    /// A fixed vector (computed apart, with Python's hmac and hashlib): the code's text, its lookup
    /// and a tag must never change, or devices of two versions would not find each other.
    @Test func derivationsAreStable() throws {
        let code = try #require(JoinCode(bytes: (0..<10).map { UInt8($0) }))
        #expect(code.text == "000G-40R4-0M30-E209")
        // Interpolated into a log or an error, the code shows nothing.
        #expect("\(code)" == "JoinCode(redacted)" && !String(describing: code).contains("000G"))
        #expect(code.lookup == "bde798fd81bf206ef782fd16a8f412a1")
        let fields = JoinRequestFields(
            origin: Self.origin,
            lookup: code.lookup,
            publicKey: Array(repeating: 1, count: 32),
            agreementKey: Array(repeating: 2, count: 32),
            name: "phone"
        )
        #expect(
            Hex.encode(DeviceJoin.tag(fields, code: code))
                == "ccb18270d1e6fba1d588b042fd2d03ca36f5506c31705eef5cf12679069120a4"
        )
        var generator = SeededRandomNumberGenerator(seed: 1)
        #expect(JoinCode(using: &generator).lookup != code.lookup)
    }

    @Test func aTagVerifiesOnlyForEveryFieldAsSentAndTheSameCode() throws {
        var generator = SeededRandomNumberGenerator(seed: 5)
        let code = JoinCode(using: &generator)
        let fields = Self.fields(code, agreement: Curve25519.KeyAgreement.PrivateKey())
        let tag = DeviceJoin.tag(fields, code: code)
        #expect(DeviceJoin.verifyTag(tag, of: fields, code: code))
        #expect(!DeviceJoin.verifyTag(tag, of: fields, code: JoinCode(using: &generator)))
        for index in tag.indices {
            var flipped = tag
            flipped[index] ^= 0x01
            #expect(!DeviceJoin.verifyTag(flipped, of: fields, code: code))
        }
        var changes: [JoinRequestFields] = []
        var other = fields
        other.origin = ServiceOrigin("https://evil.example.org")!
        changes.append(other)
        other = fields
        other.lookup = JoinCode(using: &generator).lookup
        changes.append(other)
        other = fields
        other.publicKey[0] ^= 1
        changes.append(other)
        other = fields
        other.agreementKey = Array(Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation)
        changes.append(other)
        other = fields
        other.name = "phone "
        changes.append(other)
        for changed in changes { #expect(!DeviceJoin.verifyTag(tag, of: changed, code: code)) }
    }

    @Test func aGrantOpensForItsDeviceWithItsCode() throws {
        var generator = SeededRandomNumberGenerator(seed: 6)
        let code = JoinCode(using: &generator)
        let agreement = Curve25519.KeyAgreement.PrivateKey()
        let fields = Self.fields(code, agreement: agreement)
        let grant = Self.grant()
        let sealed = try DeviceJoin.seal(grant, for: fields, code: code)
        let opened = try DeviceJoin.open(sealed, for: fields, agreementKey: agreement, code: code)
        #expect(opened.account == grant.account && opened.approver == grant.approver)
        #expect(opened.approval == grant.approval && opened.vaultID == grant.vaultID)
        #expect(opened.vaultKey == grant.vaultKey)
        // Neither the vault key nor the account is in the clear.
        #expect(!Hex.encode(sealed).contains(Hex.encode(Array(repeating: 9, count: 16))))
        #expect(!String(decoding: sealed, as: UTF8.self).contains(grant.account))
    }

    @Test func aGrantIsRefusedWhenAnyByteOrBoundFieldChanges() throws {
        var generator = SeededRandomNumberGenerator(seed: 7)
        let code = JoinCode(using: &generator)
        let agreement = Curve25519.KeyAgreement.PrivateKey()
        let fields = Self.fields(code, agreement: agreement)
        let sealed = try DeviceJoin.seal(Self.grant(), for: fields, code: code)
        for index in sealed.indices {
            var flipped = sealed
            flipped[index] ^= 0x20
            #expect(throws: VaultSyncError.self) {
                try DeviceJoin.open(flipped, for: fields, agreementKey: agreement, code: code)
            }
        }
        #expect(throws: VaultSyncError.self) {
            try DeviceJoin.open(Array(sealed.dropLast()), for: fields, agreementKey: agreement, code: code)
        }
        var changed = fields
        changed.origin = ServiceOrigin("https://evil.example.org")!
        var refusals = [changed]
        changed = fields
        changed.lookup = JoinCode(using: &generator).lookup
        refusals.append(changed)
        changed = fields
        changed.publicKey[5] ^= 1
        refusals.append(changed)
        changed = fields
        changed.agreementKey = Array(Curve25519.KeyAgreement.PrivateKey().publicKey.rawRepresentation)
        refusals.append(changed)
        for fields in refusals {
            do {
                _ = try DeviceJoin.open(sealed, for: fields, agreementKey: agreement, code: code)
                Issue.record("a grant bound to other fields is refused")
            } catch {
                #expect(error.code == .joinMismatch)
            }
        }
        // Made without the code (a server sealing a grant of its own to the device's key).
        let forged = try DeviceJoin.seal(Self.grant(), for: fields, code: JoinCode(using: &generator))
        do {
            _ = try DeviceJoin.open(forged, for: fields, agreementKey: agreement, code: code)
            Issue.record("a grant made without the code is refused")
        } catch {
            #expect(error.code == .joinMismatch)
            #expect(error.message.contains("someone may have altered it"))
        }
    }

    @Test func aGrantSealedForOneDeviceDoesNotOpenWithAnotherKey() throws {
        var generator = SeededRandomNumberGenerator(seed: 8)
        let code = JoinCode(using: &generator)
        let fields = Self.fields(code, agreement: Curve25519.KeyAgreement.PrivateKey())
        let sealed = try DeviceJoin.seal(Self.grant(), for: fields, code: code)
        do {
            _ = try DeviceJoin.open(sealed, for: fields, agreementKey: Curve25519.KeyAgreement.PrivateKey(), code: code)
            Issue.record("another key does not open the grant")
        } catch {
            #expect(error.code == .cannotOpen)
        }
    }
}
