import Foundation
import Testing
import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#endif

/// The one rule for blocking work: each executor is one thread of its own, and a `.background` one
/// yields the processor to the rest of the process (the web app's audit, issue 27 item 5).
@Suite struct DedicatedThreadExecutorTests {
    /// The calling thread's nice value and id.
    static func niceAndThread() -> (nice: Int32, thread: String) {
        #if os(Linux)
        errno = 0
        let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        return (errno == 0 ? nice : -100, "\(pthread_self())")
        #else
        return (0, "\(pthread_self())")
        #endif
    }

    static func run(on executor: DedicatedThreadExecutor) async -> (nice: Int32, thread: String) {
        await Task(executorPreference: executor) {
            defer { executor.finish() }
            return Self.niceAndThread()
        }.value
    }

    @Test func aBackgroundExecutorRunsAtALowerPriorityThanANormalOne() async throws {
        #if os(Linux)
        let normal = await Self.run(on: DedicatedThreadExecutor(name: "test.normal"))
        let background = await Self.run(on: DedicatedThreadExecutor(name: "test.background", priority: .background))
        let caller = Self.niceAndThread()
        #expect(normal.nice == caller.nice)
        #expect(background.nice == min(caller.nice + 10, 19))
        // Each is a thread of its own, not the caller's.
        #expect(normal.thread != caller.thread && background.thread != caller.thread)
        // Lowering one thread leaves the process's other threads as they were.
        #expect(Self.niceAndThread().nice == caller.nice)
        #endif
    }
}
