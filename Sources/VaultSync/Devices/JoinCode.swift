import Crypto
import _KeyhavenSupport

/// The code a person carries from a new device to one already in sync (`keyhaven sync join`, then
/// `keyhaven device approve`): 80 random bits, shown as 16 Crockford base32 characters in
/// four groups (`K7QM-2XPA-9FRT-4HDW`). It never goes to the server: from it both devices derive
/// the join request's ``lookup`` (what the server files the request under) and a MAC key with which
/// each proves to the other that it knows the code (``DeviceJoin``), so a server that relays the
/// join cannot substitute its own keys.
///
/// Reading is forgiving where people are: case does not matter, dashes and spaces are ignored, and
/// the letters Crockford's alphabet leaves out for looking like digits are read as those digits
/// (O as 0, I and L as 1).
///
/// The code is a secret for its 10 minutes: ``text`` is what the person reads, ``description`` is
/// redacted (a code interpolated into a log or an error shows nothing), and two codes compare in
/// constant time.
public struct JoinCode: Equatable, Sendable, CustomStringConvertible {
    /// The code's 10 bytes (80 bits).
    let bytes: [UInt8]

    /// The number of bytes in a code.
    public static let byteCount = 10
    /// Crockford's base32 alphabet: no I, L, O or U.
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// A new random code.
    public init(using generator: inout some RandomNumberGenerator) {
        bytes = (0..<Self.byteCount).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// The code with these 10 bytes, else nil.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// Reads a code as a person typed it.
    ///
    /// - Throws: ``VaultSyncError/Code/invalidJoinCode`` naming what is wrong (a character that is
    ///   not in the alphabet, by position; too few or too many characters), never echoing the text.
    public init(parsing text: String) throws(VaultSyncError) {
        var values: [UInt8] = []
        var position = 0
        for scalar in text.unicodeScalars {
            if scalar == "-" || scalar == " " || scalar == "\t" { continue }
            position += 1
            guard scalar.isASCII else {
                throw Self.invalid("character \(position) is not a letter or digit of a join code")
            }
            var byte = UInt8(scalar.value)
            if (97...122).contains(byte) { byte -= 32 }  // lowercase
            switch byte {
            case UInt8(ascii: "O"): byte = UInt8(ascii: "0")
            case UInt8(ascii: "I"), UInt8(ascii: "L"): byte = UInt8(ascii: "1")
            default: break
            }
            guard let value = Self.alphabet.firstIndex(of: byte) else {
                let never = byte == UInt8(ascii: "U") ? " (U is never one)" : ""
                throw Self.invalid("character \(position) is not a letter or digit of a join code\(never)")
            }
            values.append(UInt8(value))
        }
        guard values.count == 16 else {
            throw Self.invalid(
                "a join code has 16 letters and digits (like K7QM-2XPA-9FRT-4HDW); this one has \(values.count)"
            )
        }
        var bytes: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for value in values {
            buffer = buffer << 5 | UInt32(value)
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        self.bytes = bytes
    }

    private static func invalid(_ message: String) -> VaultSyncError {
        VaultSyncError(.invalidJoinCode, "\(message); type the code the new device shows")
    }

    /// Redacted: the code is a secret (``text`` shows it).
    public var description: String { "JoinCode(redacted)" }

    /// Compares in constant time.
    public static func == (a: JoinCode, b: JoinCode) -> Bool { constantTimeEqual(a.bytes, b.bytes) }

    /// `XXXX-XXXX-XXXX-XXXX` in Crockford base32: what the person reads and types.
    public var text: String {
        var symbols: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                symbols.append(Self.alphabet[Int((buffer >> UInt32(bits)) & 31)])
            }
        }
        let groups = stride(from: 0, to: symbols.count, by: 4).map {
            String(decoding: symbols[$0..<min($0 + 4, symbols.count)], as: UTF8.self)
        }
        return groups.joined(separator: "-")
    }

    /// What the server files the join request under: 16 bytes derived from the code (HKDF-SHA256,
    /// its own label), in hex. The server learns it; it tells nothing about the MAC key.
    public var lookup: String { Hex.encode(derive("lookup", 16).withUnsafeBytes { Array($0) }) }

    /// The key of the join's MACs (``DeviceJoin``): 32 bytes derived from the code (its own label).
    var macKey: SymmetricKey { derive("mac", 32) }

    private func derive(_ label: String, _ count: Int) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: bytes),
            salt: Array("keyhaven-join/v1".utf8),
            info: Array("keyhaven-join/v1/\(label)".utf8),
            outputByteCount: count
        )
    }
}
