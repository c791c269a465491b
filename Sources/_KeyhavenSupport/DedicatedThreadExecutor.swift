import Foundation

#if canImport(Glibc)
import Glibc
#endif

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

    /// How the thread competes for the processor.
    public enum Priority: Sendable {
        /// Like every other thread of the process.
        case normal
        /// Yields to the rest of the process: long work that nobody waits for (the web app's audit
        /// while pages are served). On Linux the thread's nice value is raised by 10 (the nice value
        /// is per thread there), so on a busy machine it gets about a tenth of what a normal thread
        /// gets; on an idle one it runs at full speed.
        case background
    }

    public init(name: String = "keyhaven.dedicated", priority: Priority = .normal) {
        let thread = Thread { [self] in
            if priority == .background { Self.lowerCurrentThreadPriority() }
            while let job = next() {
                job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
            }
        }
        thread.name = name
        thread.start()
    }

    /// Raises the calling thread's nice value by 10 where the system has per-thread nice values
    /// (Linux: `setpriority(PRIO_PROCESS, 0, …)` acts on the calling thread). Elsewhere nothing.
    private static func lowerCurrentThreadPriority() {
        #if os(Linux) && canImport(Glibc)
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        errno = 0
        let current = getpriority(which, 0)
        guard errno == 0 else { return }
        _ = setpriority(which, 0, min(current + 10, 19))
        #endif
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
