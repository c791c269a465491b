import Foundation

/// An executor that runs every job on one thread of its own: **Keyhaven's one rule for blocking
/// work.** Synchronous calls that block (SQLite, scrypt, waiting for a process) run on a thread like
/// this, never on Swift's cooperative pool (on Linux: Dispatch's global queue, which every `async`
/// function shares) and never on a NIO event loop (which serves every request).
///
/// - As the **serial executor of an actor** (`KeyhavenApp.KeyhavenSession`, the owner of the unlocked
///   vault): the actor's methods run on this thread; callers only `await`.
/// - As a **task executor** for a task that must call such code itself:
///
/// ```swift
/// let executor = DedicatedThreadExecutor(name: "keyhaven.tool")
/// Task(executorPreference: executor) {
///     defer { executor.finish() }
///     await work()
/// }
/// ```
///
/// Not a Dispatch queue: a serial queue runs its blocks on threads of Dispatch's global pool, the
/// very pool Swift concurrency uses on Linux. Call ``finish()`` when done: the thread then ends after
/// the jobs already enqueued. The identity provider, which serves many requests, keeps its own
/// `NIOThreadPool` for password hashing and serial reader threads for SQLite (IdentityProvider).
public final class DedicatedThreadExecutor: SerialExecutor, TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var finished = false

    public init(name: String = "keyhaven.dedicated") {
        let thread = Thread { [self] in
            while let job = next() {
                job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            }
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
