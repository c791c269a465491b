import Foundation
import _KeyhavenSupport

/// One fuzz input: arbitrary bytes as a `multipart/form-data` body with the boundary `kh-b`, as the
/// web app's import form sends it (its CSRF token is inside the body, so it is parsed first).
///
/// Beyond "no crash": a body that parses serializes and parses back to the same parts, and the
/// part limit holds.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let body = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard let form = MultipartForm.parse(body, boundary: "kh-b") else { return 0 }
    guard form.parts.count <= MultipartForm.maximumParts else { fatalError("more parts than the limit") }
    // Names and file names with a quote, CR or LF cannot be written back unquoted: skip those.
    let writable = form.parts.allSatisfy { part in
        ([part.name] + (part.fileName.map { [$0] } ?? [])).allSatisfy { !$0.contains(where: { "\"\r\n".contains($0) }) }
    }
    guard writable else { return 0 }
    guard let again = MultipartForm.parse(form.serialized(boundary: "kh-b"), boundary: "kh-b"), again == form else {
        fatalError("a parsed form does not parse back the same")
    }
    return 0
}

/// No generated seeds: scripts/fuzz.sh writes upload bodies.
func seeds() -> [[UInt8]] { [] }
