import Foundation
import _KeyhavenSupport

/// One fuzz input: arbitrary bytes as an `application/x-www-form-urlencoded` body, as the identity
/// provider's token, revoke and sign-in endpoints and shiny's forms read them.
///
/// Beyond "no crash": encoding the fields and parsing the result gives the same fields in the same
/// order (names and values with `&`, `=`, `+`, `%` and any Unicode survive); `uniqueFields` agrees
/// with `parse` (nil exactly when a name repeats; otherwise every field, by name).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let body = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    let fields = FormURLEncoding.parse(body)
    let encoded = FormURLEncoding.encode(fields.map { ($0.name, $0.value) })
    let again = FormURLEncoding.parse(encoded)
    guard again.map(\.name) == fields.map(\.name), again.map(\.value) == fields.map(\.value) else {
        fatalError("encoded fields do not parse back: \(body.debugDescription) → \(encoded.debugDescription)")
    }
    guard encoded.utf8.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: " ") }) else {
        fatalError("an encoded body that is not plain ASCII: \(encoded.debugDescription)")
    }
    let names = fields.map(\.name)
    let unique = FormURLEncoding.uniqueFields(body)
    if Set(names).count == names.count {
        guard let unique, unique.count == fields.count, fields.allSatisfy({ unique[$0.name] == $0.value }) else {
            fatalError("uniqueFields lost a field")
        }
    } else if unique != nil {
        fatalError("uniqueFields accepted a repeated name")
    }
    return 0
}

/// No generated seeds: scripts/fuzz.sh writes form bodies.
func seeds() -> [[UInt8]] { [] }
