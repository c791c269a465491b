public import Foundation

/// A credential's identity: a lower-case UUID. It is the associated data of every sealed field of the
/// record, so ciphertext moved between records fails to open.
public struct CredentialID: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public let rawValue: String

    public init(_ uuid: UUID = UUID()) {
        rawValue = uuid.uuidString.lowercased()
    }

    /// An identifier read back from storage or typed by a person (any case).
    public init?(rawValue: String) {
        guard let uuid = UUID(uuidString: rawValue) else { return nil }
        self.init(uuid)
    }

    public var description: String { rawValue }

    /// The first eight characters, enough to tell credentials apart in listings.
    public var short: String { String(rawValue.prefix(8)) }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = CredentialID(rawValue: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a UUID"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
