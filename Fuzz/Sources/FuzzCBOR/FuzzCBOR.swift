import Passkeys

/// One fuzz input: arbitrary bytes as CBOR, as an authenticator's attestation object or a relying
/// party's options arrive.
///
/// Beyond "no crash": an item that decodes encodes canonically, and that encoding decodes to the
/// same item (maps in canonical order) and encodes to itself.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard let item = try? CBOR.decode(bytes) else { return 0 }
    let canonical = item.encoded()
    guard let again = try? CBOR.decode(canonical) else { fatalError("a canonical encoding does not decode") }
    guard again.encoded() == canonical else { fatalError("the canonical encoding is not stable") }
    return 0
}

/// No generated seeds: scripts/fuzz.sh writes CBOR items.
func seeds() -> [[UInt8]] { [] }
