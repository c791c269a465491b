public import Foundation

/// A clock tests move by hand, for code that takes `now: @Sendable () -> Date`.
///
/// ```swift
/// let clock = TestClock(Date(timeIntervalSince1970: 1_700_000_000))
/// let vault = try Vault.create(at: url, masterPassword: "pw", now: clock.now)
/// clock.advance(by: 31 * 24 * 3600)
/// ```
public final class TestClock: Sendable {
    private let current: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
        current = Mutex(start)
    }

    /// The current time, as a closure to inject.
    public var now: @Sendable () -> Date {
        { [current] in current.withLock { $0 } }
    }

    public func advance(by interval: TimeInterval) {
        current.withLock { $0 += interval }
    }

    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}

/// A minimal lock box (the stdlib's `Synchronization.Mutex` needs newer macOS deployment targets).
final class Mutex<Value>: @unchecked Sendable {
    // Every access goes through `lock`.
    private var value: Value
    private let lock = NSLock()

    init(_ value: Value) {
        self.value = value
    }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
