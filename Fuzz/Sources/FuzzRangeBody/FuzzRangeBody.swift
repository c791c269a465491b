import BreachCheck
import Foundation

/// One fuzz input: arbitrary bytes as the body of a range response (what a range server, ours or
/// anyone's, answers to `GET /range/{prefix}`); the first five bytes are also tried as a prefix.
///
/// Beyond "no crash": every row kept has a 35-digit upper-case hex suffix and a count in
/// 1 … Int32.max; the rows formatted as the public API does parse back to exactly the same rows;
/// a prefix is accepted exactly when it is five hex digits, with the value those digits spell.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let body = Array(UnsafeRawBufferPointer(start: start, count: count))
    let rows = RangeBody.parse(body)
    for (suffix, count) in rows {
        guard suffix.utf8.count == 35, suffix.utf8.allSatisfy({ (48...57).contains($0) || (65...70).contains($0) })
        else { fatalError("a suffix that is not 35 upper-case hex digits: \(suffix.debugDescription)") }
        guard (1...Int(Int32.max)).contains(count) else { fatalError("count \(count) out of range") }
    }
    let formatted = RangeBody.format(rows.sorted { $0.key < $1.key }.map { (suffix: $0.key, count: $0.value) })
    guard RangeBody.parse(formatted) == rows else { fatalError("formatted rows do not parse back") }

    let prefix = String(decoding: body.prefix(5), as: UTF8.self)
    let value = RangeBody.prefixValue(prefix)
    let expected = prefix.utf8.count == 5 && prefix.allSatisfy(\.isHexDigit) ? UInt32(prefix, radix: 16) : nil
    guard value == expected else {
        fatalError("prefix \(prefix.debugDescription) read as \(String(describing: value))")
    }
    return 0
}

/// No generated seeds: scripts/fuzz.sh writes range bodies.
func seeds() -> [[UInt8]] { [] }
