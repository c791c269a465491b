import Crypto
public import Foundation
import _CryptoExtras
public import _KeyhavenSupport

/// The server's secret VOPRF(P-384, SHA-384) key (RFC 9497). Its description names only the key
/// ID; the scalar leaves only through ``serialized`` (for ``save(to:)``'s 0600 file).
///
/// `@unchecked Sendable`: an immutable wrapper of swift-crypto's key, which is a value of immutable
/// parts that swift-crypto does not mark `Sendable`.
public struct BreachPSIServerKey: @unchecked Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The key file's first eight bytes.
    static let magic = Array("KHPSIKEY".utf8)
    static let scalarLength = 48

    let key: P384._VOPRF.PrivateKey
    /// The public key clients pin.
    public let publicKey: BreachPSIPublicKey

    /// A new key from `generator` (`SystemRandomNumberGenerator` in production): 48 random bytes,
    /// drawn again in the (2^-190) case they are not a valid scalar.
    public init(using generator: inout some RandomNumberGenerator) {
        while true {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(Self.scalarLength)
            for _ in 0..<(Self.scalarLength / 8) {
                withUnsafeBytes(of: generator.next().bigEndian) { bytes.append(contentsOf: $0) }
            }
            if let key = try? Self(scalar: bytes) {
                self = key
                return
            }
        }
    }

    /// The key with the 48-byte big-endian scalar `scalar` (RFC 9497's `skS`).
    public init(scalar: some Collection<UInt8>) throws(BreachPSIError) {
        let bytes = Array(scalar)
        guard bytes.count == Self.scalarLength, bytes.contains(where: { $0 != 0 }),
            let key = try? P384._VOPRF.PrivateKey(rawRepresentation: bytes)
        else {
            throw BreachPSIError(.invalidKey, "the server key is not a P-384 scalar; generate a new key")
        }
        self.key = key
        self.publicKey = BreachPSIPublicKey(key.publicKey)
    }

    /// The key file: `KHPSIKEY`, version 1, the 48-byte scalar (57 bytes).
    public var serialized: [UInt8] { Self.magic + [1] + Array(key.rawRepresentation) }

    /// Reads ``serialized``.
    public init(serialized: some Collection<UInt8>) throws(BreachPSIError) {
        let bytes = Array(serialized)
        guard bytes.count == Self.magic.count + 1 + Self.scalarLength, Array(bytes.prefix(8)) == Self.magic else {
            throw BreachPSIError(.invalidKey, "not a Keyhaven breach-PSI key file")
        }
        guard bytes[8] == 1 else {
            throw BreachPSIError(.unsupportedVersion, "the key file is version \(bytes[8]); this build reads 1")
        }
        try self.init(scalar: bytes[9...])
    }

    /// Writes the key to a new file only its owner can read (refuses an existing path).
    public func save(to url: URL) throws(BreachPSIError) {
        do {
            try PrivateFile.create(at: url, contents: serialized)
        } catch {
            throw BreachPSIError(.io, "could not write the key file \(url.path): \(error)")
        }
    }

    /// Reads a key file written by ``save(to:)``.
    public init(contentsOf url: URL) throws(BreachPSIError) {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw BreachPSIError(.io, "could not read the key file \(url.path)")
        }
        try self.init(serialized: data)
    }

    /// Evaluates a client's blinded element: the evaluated element and its DLEQ proof (145 bytes).
    func evaluate(blindedElement: [UInt8]) throws(BreachPSIError) -> [UInt8] {
        do {
            let element = try P384._VOPRF.BlindedElement(oprfRepresentation: blindedElement)
            return Array(try key.evaluate(element).rawRepresentation)
        } catch {
            throw BreachPSIError(.malformedRequest, "the blinded element is not a P-384 point")
        }
    }

    /// The 48-byte OPRF output for `input`, computed without blinding (what the bucket builder stores).
    func output(for input: [UInt8]) throws(BreachPSIError) -> [UInt8] {
        do {
            return Array(try key.evaluate(Data(input)))
        } catch {
            throw BreachPSIError(.invalidKey, "the server key could not evaluate an input")
        }
    }

    public var description: String { "BreachPSIServerKey(id: \(Hex.encode(publicKey.id)))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["id": Hex.encode(publicKey.id)]) }
}

/// The server's public key, which clients pin: every answer's proof is checked against it.
public struct BreachPSIPublicKey: @unchecked Sendable, Hashable, CustomStringConvertible {
    let key: P384._VOPRF.PublicKey
    /// The compressed SEC1 point (49 bytes, RFC 9497's `SerializeElement(pkS)`).
    public let representation: [UInt8]
    /// The key's ID, sent in every response: the first 16 bytes of
    /// SHA-256("keyhaven breach-psi v1 key\0" ‖ ``representation``).
    public let id: [UInt8]

    static let idTag = Array("keyhaven breach-psi v1 key\0".utf8)
    static let idLength = 16
    static let representationLength = 49

    init(_ key: P384._VOPRF.PublicKey) {
        self.key = key
        representation = Array(key.oprfRepresentation)
        var hasher = SHA256()
        hasher.update(data: Self.idTag)
        hasher.update(data: representation)
        id = Array(hasher.finalize().prefix(Self.idLength))
    }

    /// Reads a published key: a compressed P-384 point (49 bytes).
    public init(representation: some Collection<UInt8>) throws(BreachPSIError) {
        let bytes = Array(representation)
        guard bytes.count == Self.representationLength,
            let key = try? P384._VOPRF.PublicKey(compressedRepresentation: bytes)
        else {
            throw BreachPSIError(.invalidKey, "the published key is not a compressed P-384 point (49 bytes)")
        }
        self.init(key)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.representation == rhs.representation }
    public func hash(into hasher: inout Hasher) { hasher.combine(representation) }
    public var description: String { "BreachPSIPublicKey(id: \(Hex.encode(id)))" }
}

/// The key a client pins (`audit --breach-psi-key`): the key ID `breach psi build` prints (32 hex
/// digits) or the whole public key of `public-key.hex` (98 hex digits). A server that publishes
/// another key is refused before anything is sent (``BreachPSIError/Code/keyNotPinned``).
public struct BreachPSIKeyPin: Sendable, Equatable, CustomStringConvertible {
    /// The pinned key's ID (also when the whole key was given).
    public let id: [UInt8]
    /// The whole public key, when it was given.
    public let representation: [UInt8]?

    /// Reads a pin: a key ID or a public key in hex (spaces and a trailing newline ignored).
    public init(hex text: String) throws(BreachPSIError) {
        let cleaned = text.filter { !$0.isWhitespace }
        guard let bytes = Hex.decode(cleaned) else {
            throw BreachPSIError(
                .invalidKey,
                "the pinned breach-PSI key is not hex; give the key ID `breach psi build` prints (32 hex digits) or the contents of public-key.hex (98)"
            )
        }
        switch bytes.count {
        case BreachPSIPublicKey.idLength:
            (id, representation) = (bytes, nil)
        case BreachPSIPublicKey.representationLength:
            let key = try BreachPSIPublicKey(representation: bytes)
            (id, representation) = (key.id, key.representation)
        default:
            throw BreachPSIError(
                .invalidKey,
                "the pinned breach-PSI key has \(bytes.count) bytes; give the key ID (16 bytes, 32 hex digits) or public-key.hex (49 bytes, 98 hex digits)"
            )
        }
    }

    /// Whether `key` is the pinned key (constant time).
    public func matches(_ key: BreachPSIPublicKey) -> Bool {
        if let representation { return constantTimeEqual(representation, key.representation) }
        return constantTimeEqual(id, key.id)
    }

    public var description: String { "BreachPSIKeyPin(id: \(Hex.encode(id)))" }
}
