import BreachCheck
import Foundation
import KeyhavenTesting
import Testing
import _KeyhavenSupport

@testable import BreachPSI

/// The server key: made from injected randomness, stored in a 0600 file, never shown.
@Suite(.offCooperativePool)
struct BreachPSIKeyTests {
    @Test func generationUsesTheInjectedGenerator() {
        var first = SeededRandomNumberGenerator(seed: 1)
        var again = SeededRandomNumberGenerator(seed: 1)
        var other = SeededRandomNumberGenerator(seed: 2)
        let key = BreachPSIServerKey(using: &first)
        #expect(BreachPSIServerKey(using: &again).serialized == key.serialized)
        #expect(BreachPSIServerKey(using: &other).serialized != key.serialized)
        #expect(key.serialized.count == 57)
    }

    @Test func savedKeyLoadsBackAndIsPrivate() throws {
        var rng = SeededRandomNumberGenerator(seed: 3)
        let key = BreachPSIServerKey(using: &rng)
        let directory = try TemporaryDirectory.make()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("psi.key")
        try key.save(to: url)
        let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let loaded = try BreachPSIServerKey(contentsOf: url)
        #expect(loaded.serialized == key.serialized)
        #expect(loaded.publicKey == key.publicKey)
        #expect(throws: BreachPSIError(.io, "")) { try key.save(to: url) }
        #expect(throws: BreachPSIError(.io, "")) {
            try BreachPSIServerKey(contentsOf: directory.appendingPathComponent("missing"))
        }
    }

    @Test func badKeyFilesAreRefused() throws {
        var rng = SeededRandomNumberGenerator(seed: 4)
        let good = BreachPSIServerKey(using: &rng).serialized
        #expect(throws: BreachPSIError(.invalidKey, "")) { try BreachPSIServerKey(serialized: good.dropLast()) }
        var magic = good
        magic[0] = 0
        #expect(throws: BreachPSIError(.invalidKey, "")) { try BreachPSIServerKey(serialized: magic) }
        var version = good
        version[8] = 2
        #expect(throws: BreachPSIError(.unsupportedVersion, "")) { try BreachPSIServerKey(serialized: version) }
        let zero = Array(good.prefix(9)) + [UInt8](repeating: 0, count: 48)
        #expect(throws: BreachPSIError(.invalidKey, "")) { try BreachPSIServerKey(serialized: zero) }
        let overOrder = Array(good.prefix(9)) + [UInt8](repeating: 0xff, count: 48)
        #expect(throws: BreachPSIError(.invalidKey, "")) { try BreachPSIServerKey(serialized: overOrder) }
        #expect(throws: BreachPSIError(.invalidKey, "")) {
            try BreachPSIPublicKey(representation: [2] + [UInt8](repeating: 0xff, count: 48))
        }
    }

    /// The scalar appears in no description, debug description, dump or error.
    @Test func theSecretIsNeverShown() throws {
        var rng = SeededRandomNumberGenerator(seed: 6)
        let key = BreachPSIServerKey(using: &rng)
        let scalar = Array(key.serialized.suffix(48))
        let secrets = [Hex.encode(scalar), Hex.encode(scalar, uppercase: true), Hex.encode(scalar.prefix(8))]
        var dumped = ""
        dump(key, to: &dumped)
        var texts = [String(describing: key), String(reflecting: key), dumped, "\(key.publicKey)"]
        for bad in [Array(key.serialized.prefix(9)) + [UInt8](repeating: 0xff, count: 48), key.serialized.dropLast()] {
            do {
                _ = try BreachPSIServerKey(serialized: bad)
            } catch {
                texts += [String(describing: error), String(reflecting: error)]
            }
        }
        #expect(texts.count == 8)
        for text in texts {
            for secret in secrets { #expect(!text.contains(secret), "\(text)") }
        }
        #expect(String(describing: key).contains(Hex.encode(key.publicKey.id)))
    }

    /// A pending query shows its bucket, never the digest it blinds.
    @Test func aQueryDoesNotShowItsDigest() throws {
        var rng = SeededRandomNumberGenerator(seed: 7)
        let client = BreachPSIClient(publicKey: BreachPSIServerKey(using: &rng).publicKey)
        let digest = SHA1Digest(password: "password")
        let query = try client.query(digest)
        var dumped = ""
        dump(query, to: &dumped)
        for text in [String(describing: query), String(reflecting: query), dumped] {
            #expect(!text.contains(digest.hex) && !text.contains(Hex.encode(digest.bytes)), "\(text)")
            #expect(!text.contains("input"), "\(text)")
        }
    }
}
