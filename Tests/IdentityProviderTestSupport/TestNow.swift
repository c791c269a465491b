public import Foundation

/// A settable clock for provider configurations.
public final class TestNow: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date()

    public init() {}

    public var now: Date { lock.withLock { current } }

    public func advance(_ seconds: TimeInterval) { lock.withLock { current += seconds } }
}
