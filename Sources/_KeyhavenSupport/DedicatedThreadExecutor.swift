import Foundation

/// A task executor that runs every job on one thread of its own: for async code that must make
/// synchronous calls (SQLite, scrypt) without holding a thread of Swift's cooperative pool.
///
/// ```swift
/// let executor = DedicatedThreadExecutor(name: "keyhaven.upgrade")
/// Task(executorPreference: executor) {
///     defer { executor.finish() }
///     await upgrade()
/// }
/// ```
///
/// Not a Dispatch queue: on Linux, Swift concurrency's cooperative pool *is* Dispatch's global root
/// queue, and a serial queue runs its blocks on threads of that same pool. Call ``finish()`` when
/// done: the thread then ends after the jobs already enqueued.
public final class DedicatedThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var finished = false

    public init(name: String = "keyhaven.dedicated") {
        let thread = Thread { [self] in
            while let job = next() { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
        thread.name = name
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
