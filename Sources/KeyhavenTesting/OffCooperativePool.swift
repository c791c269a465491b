import Dispatch
import Foundation
public import Testing

/// Runs a test on a thread of its own instead of Swift's cooperative pool.
///
/// The cooperative pool has one thread per core: two here. A synchronous test that computes for
/// seconds (12,600 strength estimates, a 100,000-hash index, scrypt at full strength) holds one of
/// them the whole time, and two such tests starve every test that runs an HTTP server in-process,
/// whose timeouts then fire. Mark heavy synchronous tests or suites `.offCooperativePool`: the test
/// body runs on a dedicated Dispatch queue through a task executor preference, so `#expect` and task
/// locals work as usual.
public struct OffCooperativePool: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else { return try await function() }
        let executor = DedicatedQueueExecutor()
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

/// A task executor that runs every job on one thread of its own.
///
/// Not a Dispatch queue: on Linux, Swift concurrency's cooperative pool *is* Dispatch's global root
/// queue, and a serial queue runs its blocks on threads of that same pool. Call ``finish()`` when
/// done: the thread then ends after the jobs already enqueued.
public final class DedicatedQueueExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var finished = false

    public init() {
        let thread = Thread { [self] in
            while let job = next() { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
        thread.name = "keyhaven.testing.dedicated"
        thread.start()
    }

    /// The next job, waiting for one; nil once the executor is finished.
    private func next() -> UnownedJob? {
        condition.lock()
        defer { condition.unlock() }
        while jobs.isEmpty && !finished { condition.wait() }
        return jobs.isEmpty ? nil : jobs.removeFirst()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the thread end once the jobs already enqueued have run.
    public func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }
}
