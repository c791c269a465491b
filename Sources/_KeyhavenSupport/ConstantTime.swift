/// Compares two secrets in time that depends only on their lengths: tokens, MACs, one-time codes,
/// password hashes. The one implementation every Keyhaven target uses.
public func constantTimeEqual(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for (x, y) in zip(a, b) { difference |= x ^ y }
    return difference == 0
}

/// ``constantTimeEqual(_:_:)`` on the UTF-8 bytes of two strings.
public func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    constantTimeEqual(Array(a.utf8), Array(b.utf8))
}
