import Crypto
import Foundation
import Passkeys
import Testing

/// COSE keys and authenticator data: written and read back, signatures checked, malformed data
/// refused with its reason.
@Suite struct AuthenticatorDataTests {
    static let rpIDHash = Array(SHA256.hash(data: Data("shiny.example".utf8)))

    @Test func anES256KeyIsWrittenAsCOSEAndReadBack() throws {
        let privateKey = P256.Signing.PrivateKey()
        let key = COSEKey.es256(privateKey.publicKey)
        let cbor = key.cbor
        #expect(cbor[1]?.int == 2 && cbor[3]?.int == -7 && cbor[-1]?.int == 1)
        #expect(cbor[-2]?.byteString?.count == 32 && cbor[-3]?.byteString?.count == 32)
        #expect(try COSEKey(cbor: try CBOR.decode(cbor.encoded())) == key)
        let data = Array("client data".utf8)
        let signature = Array(try privateKey.signature(for: data).derRepresentation)
        #expect(key.isValidSignature(signature, for: data))
        #expect(!key.isValidSignature(signature, for: data + [0]))
        #expect(!key.isValidSignature([0x30, 0x00], for: data))
    }

    @Test func anEd25519KeyIsWrittenAsCOSEAndReadBack() throws {
        let privateKey = Curve25519.Signing.PrivateKey()
        let key = COSEKey.ed25519(privateKey.publicKey)
        #expect(key.cbor[1]?.int == 1 && key.cbor[3]?.int == -8 && key.cbor[-1]?.int == 6)
        #expect(try COSEKey(cbor: key.cbor) == key)
        let signature = Array(try privateKey.signature(for: Array("x".utf8)))
        #expect(key.isValidSignature(signature, for: Array("x".utf8)))
    }

    @Test func unknownOrBrokenKeysAreRefused() {
        let rs256 = CBOR.map([.init(CBOR(1), CBOR(3)), .init(CBOR(3), CBOR(-257)), .init(CBOR(-1), .bytes([1]))])
        #expect(throws: PasskeyError.self) { try COSEKey(cbor: rs256) }
        let offCurve = CBOR.map([
            .init(CBOR(1), CBOR(2)), .init(CBOR(3), CBOR(-7)), .init(CBOR(-1), CBOR(1)),
            .init(CBOR(-2), .bytes(Array(repeating: 1, count: 32))),
            .init(CBOR(-3), .bytes(Array(repeating: 2, count: 32))),
        ])
        #expect(throws: PasskeyError.self) { try COSEKey(cbor: offCurve) }
        #expect(throws: PasskeyError.self) { try COSEKey(cbor: .map([])) }
    }

    @Test func registrationDataRoundTripsWithItsFlags() throws {
        let key = COSEKey.es256(P256.Signing.PrivateKey().publicKey)
        let data = AuthenticatorData(
            rpIDHash: Self.rpIDHash,
            flags: [.userPresent, .userVerified, .backupEligible],
            signCount: 0,
            attestedCredential: .init(
                aaguid: Array(repeating: 0, count: 16),
                credentialID: Array(0..<32),
                publicKey: key
            ),
            extensions: .map([.init(.text("credProps"), .map([.init(.text("rk"), .bool(true))]))])
        )
        let bytes = data.encoded()
        #expect(bytes[32] == 0x01 | 0x04 | 0x08 | 0x40 | 0x80)
        let read = try AuthenticatorData(bytes)
        #expect(read.attestedCredential == data.attestedCredential)
        #expect(read.extensions == data.extensions)
        #expect(read.rpIDHash == Self.rpIDHash && read.signCount == 0)
        #expect(read.flags.contains([.userPresent, .userVerified, .backupEligible, .attestedCredentialData]))
    }

    @Test func assertionDataIsThirtySevenBytes() throws {
        let data = AuthenticatorData(rpIDHash: Self.rpIDHash, flags: [.userPresent], signCount: 0x0102_0304)
        let bytes = data.encoded()
        #expect(bytes.count == 37)
        #expect(Array(bytes[33..<37]) == [1, 2, 3, 4])
        #expect(try AuthenticatorData(bytes).signCount == 0x0102_0304)
    }

    @Test func malformedDataIsRefused() {
        #expect(throws: PasskeyError.self) { try AuthenticatorData(Array(repeating: 0, count: 36)) }
        var trailing = AuthenticatorData(rpIDHash: Self.rpIDHash, flags: [.userPresent], signCount: 1).encoded()
        trailing.append(0)
        #expect(throws: PasskeyError.self) { try AuthenticatorData(trailing) }
        // AT set but nothing follows.
        var cut = AuthenticatorData(rpIDHash: Self.rpIDHash, flags: [.userPresent], signCount: 1).encoded()
        cut[32] |= 0x40
        #expect(throws: PasskeyError.self) { try AuthenticatorData(cut) }
        // A credential id longer than the data.
        let long = cut + Array(repeating: 0, count: 16) + [0x03, 0xFF]
        #expect(throws: PasskeyError.self) { try AuthenticatorData(long) }
    }
}
