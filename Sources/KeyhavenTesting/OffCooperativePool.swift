import Dispatch
import Foundation
public import Testing
import _KeyhavenSupport

/// Runs a test on a thread of its own instead of Swift's cooperative pool.
///
/// The cooperative pool has one thread per core: two here. A synchronous test that computes for
/// seconds (12,600 strength estimates, a 100,000-hash index, scrypt at full strength) holds one of
/// them the whole time, and two such tests starve every test that runs an HTTP server in-process,
/// whose timeouts then fire. Mark heavy synchronous tests or suites `.offCooperativePool`: the test
/// body runs on a thread of its own (a `DedicatedThreadExecutor`) through a task executor
/// preference, so `#expect` and task locals work as usual.
public struct OffCooperativePool: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else { return try await function() }
        let executor = DedicatedThreadExecutor(name: "keyhaven.testing.dedicated")
        defer { executor.finish() }
        try await withTaskExecutorPreference(executor) {
            try await function()
        }
    }
}

extension Trait where Self == OffCooperativePool {
    /// See ``OffCooperativePool``.
    public static var offCooperativePool: Self { OffCooperativePool() }
}
