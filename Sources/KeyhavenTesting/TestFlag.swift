import Foundation

/// A flag one task raises and another reads (a person pressing a button, a callback that ran).
public final class TestFlag: @unchecked Sendable {
    // Guarded by `lock`.
    private var value = false
    private let lock = NSLock()

    public init() {}

    public var isRaised: Bool { lock.withLock { value } }

    public func raise() { lock.withLock { value = true } }
}
