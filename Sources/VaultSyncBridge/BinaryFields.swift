import Foundation

/// The byte layout of the two field values that are structures (a passkey, a sign-in link): fixed
/// big-endian integers, a 4-byte length before bytes and texts, one byte per flag, dates as the bit
/// pattern of their `timeIntervalSinceReferenceDate` (exact, not rounded). One encoding per value:
/// the reader refuses what the writer could not have written (a flag other than 0 or 1, a date that
/// is not a finite number or is -0, text that is not UTF-8, a short or long buffer).
struct BinaryWriter {
    private(set) var bytes: [UInt8] = []

    mutating func append(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    mutating func append(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
    }

    mutating func append(_ data: [UInt8]) {
        append(UInt32(data.count))
        bytes += data
    }

    mutating func append(_ text: String) { append(Array(text.utf8)) }

    mutating func append(_ flag: Bool) { bytes.append(flag ? 1 : 0) }

    mutating func append(_ date: Date) { append(date.timeIntervalSinceReferenceDate.bitPattern) }
}

/// Reads ``BinaryWriter``'s layout; every read throws ``Malformed`` on bytes the writer would not
/// have produced.
struct BinaryReader {
    struct Malformed: Error {}

    private let buffer: [UInt8]
    private var offset = 0

    init(_ buffer: [UInt8]) {
        self.buffer = buffer
    }

    private mutating func take(_ count: Int) throws(Malformed) -> ArraySlice<UInt8> {
        guard count >= 0, buffer.count - offset >= count else { throw Malformed() }
        defer { offset += count }
        return buffer[offset..<offset + count]
    }

    mutating func uint64() throws(Malformed) -> UInt64 {
        try take(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func uint32() throws(Malformed) -> UInt32 {
        try take(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func bytes() throws(Malformed) -> [UInt8] {
        Array(try take(Int(try uint32())))
    }

    mutating func text() throws(Malformed) -> String {
        guard let text = String(validating: try bytes(), as: UTF8.self) else { throw Malformed() }
        return text
    }

    mutating func flag() throws(Malformed) -> Bool {
        switch try take(1).first {
        case 0: return false
        case 1: return true
        default: throw Malformed()
        }
    }

    mutating func date() throws(Malformed) -> Date {
        let bits = try uint64()
        let interval = Double(bitPattern: bits)
        guard interval.isFinite, bits != (-0.0 as Double).bitPattern else { throw Malformed() }
        return Date(timeIntervalSinceReferenceDate: interval)
    }

    /// Throws unless every byte was read.
    func finish() throws(Malformed) {
        guard offset == buffer.count else { throw Malformed() }
    }
}
