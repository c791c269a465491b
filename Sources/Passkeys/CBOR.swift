public import _KeyhavenSupport

/// A CBOR data item (RFC 8949) as WebAuthn and CTAP2 use them: attestation objects, COSE keys,
/// authenticator extensions. Maps keep their order as read; ``encoded()`` writes CTAP2's canonical
/// form (definite lengths, shortest integer encodings, map keys sorted by their encoding: shorter
/// first, then byte by byte).
public indirect enum CBOR: Hashable, Sendable {
    case unsigned(UInt64)
    /// The integer `-1 - n`.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map([Pair])
    case tagged(UInt64, CBOR)
    case bool(Bool)
    case null
    case undefined
    case float(Double)

    public struct Pair: Hashable, Sendable {
        public var key: CBOR
        public var value: CBOR

        public init(_ key: CBOR, _ value: CBOR) {
            self.key = key
            self.value = value
        }
    }

    /// An integer item (`unsigned` or `negative`).
    public init(_ value: Int) {
        self = value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// The integer value, when it is an integer that fits an `Int`.
    public var int: Int? {
        switch self {
        case .unsigned(let value): value <= UInt64(Int.max) ? Int(value) : nil
        case .negative(let value): value <= UInt64(Int.max) ? -Int(value) - 1 : nil
        default: nil
        }
    }

    public var byteString: [UInt8]? {
        if case .bytes(let bytes) = self { bytes } else { nil }
    }

    public var string: String? {
        if case .text(let text) = self { text } else { nil }
    }

    public var array: [CBOR]? {
        if case .array(let items) = self { items } else { nil }
    }

    public var pairs: [Pair]? {
        if case .map(let pairs) = self { pairs } else { nil }
    }

    /// The value of the first pair whose key is `key`, in a map.
    public subscript(key: CBOR) -> CBOR? {
        pairs?.first { $0.key == key }?.value
    }

    public subscript(key: Int) -> CBOR? { self[CBOR(key)] }
    public subscript(key: String) -> CBOR? { self[.text(key)] }
}

/// Why CBOR could not be read (the codes are stable; the messages never quote the input, only
/// where it went wrong: `CBOR truncated at byte 3`).
public typealias CBORError = KeyhavenError<CBORErrorDomain>

/// The domain of ``CBORError``: its details are ``CBORError/offset``.
public enum CBORErrorDomain: KeyhavenErrorDomain {
    public typealias Details = Int
}

extension CBORError {
    /// The byte where the input stopped being acceptable.
    public var offset: Int { details ?? 0 }

    init(_ code: Code, offset: Int, line: UInt = #line) {
        self.init(code, "CBOR \(code) at byte \(offset)", details: offset, line: line)
    }
}

extension CBORError.Code {
    /// The input ended inside an item.
    public static var truncated: Self { Self("truncated") }
    /// Bytes follow the item where none may.
    public static var trailingBytes: Self { Self("trailingBytes") }
    /// An indefinite length, a reserved additional-information value, or a break out of place.
    public static var unsupported: Self { Self("unsupported") }
    /// Nested deeper than the decoder allows.
    public static var tooDeep: Self { Self("tooDeep") }
    /// A text string that is not UTF-8.
    public static var invalidText: Self { Self("invalidText") }
    /// A map with the same key twice.
    public static var duplicateKey: Self { Self("duplicateKey") }
}

extension CBOR {
    /// Decodes exactly one item filling `bytes`.
    public static func decode(_ bytes: [UInt8], maximumDepth: Int = 16) throws(CBORError) -> CBOR {
        var reader = Reader(bytes: bytes, maximumDepth: maximumDepth)
        let item = try reader.item(depth: 0)
        guard reader.position == bytes.count else { throw CBORError(.trailingBytes, offset: reader.position) }
        return item
    }

    /// Decodes the item at the start of `bytes` and says how many bytes it took (an authenticator's
    /// credential public key is followed by its extensions).
    public static func decodePrefix(
        _ bytes: some Collection<UInt8>,
        maximumDepth: Int = 16
    ) throws(CBORError) -> (
        CBOR, consumed: Int
    ) {
        var reader = Reader(bytes: Array(bytes), maximumDepth: maximumDepth)
        let item = try reader.item(depth: 0)
        return (item, reader.position)
    }

    struct Reader {
        let bytes: [UInt8]
        let maximumDepth: Int
        var position = 0

        init(bytes: [UInt8], maximumDepth: Int) {
            self.bytes = bytes
            self.maximumDepth = maximumDepth
        }

        mutating func byte() throws(CBORError) -> UInt8 {
            guard position < bytes.count else { throw CBORError(.truncated, offset: position) }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func take(_ count: UInt64) throws(CBORError) -> ArraySlice<UInt8> {
            guard count <= UInt64(bytes.count - position) else { throw CBORError(.truncated, offset: position) }
            let end = position + Int(count)
            defer { position = end }
            return bytes[position..<end]
        }

        /// The argument of a head with additional information `info` (0…27).
        mutating func argument(_ info: UInt8) throws(CBORError) -> UInt64 {
            switch info {
            case 0..<24: return UInt64(info)
            case 24...27:
                var value: UInt64 = 0
                for byte in try take(1 << UInt64(info - 24)) { value = value << 8 | UInt64(byte) }
                return value
            default: throw CBORError(.unsupported, offset: position - 1)
            }
        }

        mutating func item(depth: Int) throws(CBORError) -> CBOR {
            guard depth <= maximumDepth else { throw CBORError(.tooDeep, offset: position) }
            let start = position
            let head = try byte()
            let major = head >> 5
            let info = head & 0x1F
            if major == 7 {
                switch info {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                case 23: return .undefined
                case 25:
                    let bits = UInt16(try argument(info))
                    return .float(Double(Float16Bits.float(bits)))
                case 26: return .float(Double(Float(bitPattern: UInt32(try argument(info)))))
                case 27: return .float(Double(bitPattern: try argument(info)))
                default: throw CBORError(.unsupported, offset: start)
                }
            }
            let argument = try argument(info)
            switch major {
            case 0: return .unsigned(argument)
            case 1: return .negative(argument)
            case 2: return .bytes(Array(try take(argument)))
            case 3:
                let raw = try take(argument)
                guard let text = String(validating: raw, as: UTF8.self) else {
                    throw CBORError(.invalidText, offset: start)
                }
                return .text(text)
            case 4:
                // Every item takes at least one byte: a count beyond what is left is truncated input.
                guard argument <= UInt64(bytes.count - position) else {
                    throw CBORError(.truncated, offset: start)
                }
                var items: [CBOR] = []
                items.reserveCapacity(Int(argument))
                for _ in 0..<argument { items.append(try item(depth: depth + 1)) }
                return .array(items)
            case 5:
                guard argument <= UInt64(bytes.count - position) / 2 else {
                    throw CBORError(.truncated, offset: start)
                }
                var pairs: [CBOR.Pair] = []
                pairs.reserveCapacity(Int(argument))
                // Keys compare by their canonical encoding: `{a: 1, b: 2}` and `{b: 2, a: 1}` are one
                // key, and -0.0 and 0.0 are two (the fuzzer found maps that re-encoded into duplicates).
                var keys = Set<[UInt8]>()
                for _ in 0..<argument {
                    let keyOffset = position
                    let key = try item(depth: depth + 1)
                    guard keys.insert(key.encoded()).inserted else {
                        throw CBORError(.duplicateKey, offset: keyOffset)
                    }
                    pairs.append(CBOR.Pair(key, try item(depth: depth + 1)))
                }
                return .map(pairs)
            case 6: return .tagged(argument, try item(depth: depth + 1))
            default: throw CBORError(.unsupported, offset: start)
            }
        }
    }
}

extension CBOR {
    /// CTAP2's canonical encoding.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    func encode(into out: inout [UInt8]) {
        switch self {
        case .unsigned(let value): Self.head(0, value, &out)
        case .negative(let value): Self.head(1, value, &out)
        case .bytes(let bytes):
            Self.head(2, UInt64(bytes.count), &out)
            out += bytes
        case .text(let text):
            Self.head(3, UInt64(text.utf8.count), &out)
            out += text.utf8
        case .array(let items):
            Self.head(4, UInt64(items.count), &out)
            for item in items { item.encode(into: &out) }
        case .map(let pairs):
            Self.head(5, UInt64(pairs.count), &out)
            let sorted = pairs.map { (key: $0.key.encoded(), value: $0.value) }.sorted { left, right in
                left.key.count != right.key.count
                    ? left.key.count < right.key.count : left.key.lexicographicallyPrecedes(right.key)
            }
            for pair in sorted {
                out += pair.key
                pair.value.encode(into: &out)
            }
        case .tagged(let tag, let item):
            Self.head(6, tag, &out)
            item.encode(into: &out)
        case .bool(let value): out.append(value ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        case .float(let value):
            out.append(0xFB)
            withUnsafeBytes(of: value.bitPattern.bigEndian) { out += $0 }
        }
    }

    /// A head: the major type and the shortest encoding of its argument.
    static func head(_ major: UInt8, _ argument: UInt64, _ out: inout [UInt8]) {
        let type = major << 5
        switch argument {
        case 0..<24: out.append(type | UInt8(argument))
        case 24...0xFF: out += [type | 24, UInt8(argument)]
        case 0x100...0xFFFF: out += [type | 25, UInt8(argument >> 8), UInt8(argument & 0xFF)]
        case 0x1_0000...0xFFFF_FFFF:
            out.append(type | 26)
            withUnsafeBytes(of: UInt32(argument).bigEndian) { out += $0 }
        default:
            out.append(type | 27)
            withUnsafeBytes(of: argument.bigEndian) { out += $0 }
        }
    }
}

/// IEEE 754 half precision, which not every platform's Swift has as `Float16`.
enum Float16Bits {
    static func float(_ bits: UInt16) -> Float {
        let sign: Float = bits & 0x8000 != 0 ? -1 : 1
        let exponent = Int((bits >> 10) & 0x1F)
        let fraction = Float(bits & 0x3FF)
        switch exponent {
        case 0: return sign * fraction * Float(sign: .plus, exponent: -24, significand: 1)
        case 31: return fraction == 0 ? sign * .infinity : .nan
        default: return sign * (1 + fraction / 1024) * Float(sign: .plus, exponent: exponent - 15, significand: 1)
        }
    }
}
