import Crypto
public import Foundation

/// CPace, the balanced PAKE of draft-irtf-cfrg-cpace-21, cipher suite CPACE-X25519-SHA512: the
/// functions of the draft with its names (`prepend_len`, `lv_cat`, `generator_string`,
/// `calculate_generator`, `scalar_mult_vfy`, `transcript_ir`, ISK), checked against the draft's test
/// vectors (Tests/AutoFillTests/Fixtures/cpace-x25519-sha512.json). X25519 is swift-crypto's; only
/// the map to the curve is Keyhaven's own (``Field25519``).
///
/// A password-derived generator g replaces X25519's base point: each side sends y·g for a fresh
/// scalar y. Someone who does not know the password can test one guess per run, by choosing their
/// own g from it before they send; the messages alone test nothing.
public enum CPace {
    /// `G.DSI` of G_X25519.
    static let dsi = Data("CPace255".utf8)
    /// SHA-512's input block (`H.s_in_bytes`).
    static let hashBlockBytes = 128

    /// `prepend_len`: the length as LEB128, then the bytes.
    static func prependLength(_ data: Data) -> Data {
        var length = data.count
        var encoded = Data()
        repeat {
            encoded.append(UInt8(length & 0x7f) | (length >= 128 ? 0x80 : 0))
            length >>= 7
        } while length > 0
        return encoded + data
    }

    /// `lv_cat`: each part with its length prepended.
    public static func lvCat(_ parts: Data...) -> Data { lvCat(parts) }

    static func lvCat(_ parts: [Data]) -> Data { parts.reduce(into: Data()) { $0 += prependLength($1) } }

    /// `generator_string(G.DSI, PRS, CI, sid, H.s_in_bytes)`: the password zero-padded to fill the
    /// hash's first block.
    static func generatorString(prs: Data, ci: Data, sid: Data) -> Data {
        let padding = max(0, hashBlockBytes - 1 - prependLength(prs).count - prependLength(dsi).count)
        return lvCat(dsi, prs, Data(count: padding), ci, sid)
    }

    /// `G.calculate_generator(H, PRS, CI, sid)`: the first 32 bytes of SHA-512 of the generator
    /// string, decoded as a u-coordinate, mapped with Elligator 2; 32 bytes.
    public static func generator(prs: Data, ci: Data, sid: Data) -> Data {
        let hash = Data(SHA512.hash(data: generatorString(prs: prs, ci: ci, sid: sid))).prefix(32)
        return mapToCurve(Data(hash))
    }

    /// Elligator 2 of `decodeUCoordinate(bytes, 255)`, encoded as a u-coordinate.
    static func mapToCurve(_ bytes: Data) -> Data {
        Data(Field25519.elligator2(Field25519(littleEndian: [UInt8](bytes))).littleEndian)
    }

    /// `G.scalar_mult_vfy(y, u)`: X25519(y, u), or nil for the neutral element (all zeros), which
    /// every low-order point on the curve or its twist gives. CPace aborts then.
    public static func scalarMultiply(_ scalar: Data, _ u: Data) -> Data? {
        guard scalar.count == 32, u.count == 32,
            let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: scalar),
            let point = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: u),
            let shared = try? key.sharedSecretFromKeyAgreement(with: point)
        else { return nil }
        // swift-crypto does not refuse the all-zero result (it follows CryptoKit), so CPace does.
        let bytes = shared.withUnsafeBytes { Data($0) }
        return bytes.reduce(0, |) == 0 ? nil : bytes
    }

    /// `transcript_ir(Ya, ADa, Yb, ADb)`: the initiator's message first.
    static func transcript(_ ya: Data, _ ada: Data, _ yb: Data, _ adb: Data) -> Data {
        lvCat(ya, ada) + lvCat(yb, adb)
    }

    /// ISK = SHA-512(lv_cat(G.DSI ‖ "_ISK", sid, K) ‖ transcript_ir(Ya, ADa, Yb, ADb)), 64 bytes.
    static func intermediateSessionKey(
        sid: Data,
        k: Data,
        ya: Data,
        ada: Data = Data(),
        yb: Data,
        adb: Data = Data()
    ) -> Data {
        Data(SHA512.hash(data: lvCat(dsi + Data("_ISK".utf8), sid, k) + transcript(ya, ada, yb, adb)))
    }

    /// The draft's key confirmation (§ "Key confirmation"): mac_key = SHA-512("CPaceMac" ‖ sid ‖ ISK).
    static func macKey(sid: Data, isk: Data) -> SymmetricKey {
        SymmetricKey(data: SHA512.hash(data: Data("CPaceMac".utf8) + sid + isk))
    }

    /// A party's tag over the message it sent: HMAC-SHA512(mac_key, lv_cat(Y, AD)), 64 bytes.
    static func confirmation(macKey: SymmetricKey, share: Data, ad: Data = Data()) -> Data {
        Data(HMAC<SHA512>.authenticationCode(for: lvCat(share, ad), using: macKey))
    }
}
