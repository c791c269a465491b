extension SiteLookups {
    /// `operation`'s result, or nil once `timeout` has passed on `clock`: `operation` is then
    /// cancelled, and this returns as soon as it stops (the HTTP client stops a request when its
    /// task is cancelled). Structured, so the lookups run where the caller's task runs (its task
    /// executor preference: the web app's audit thread, a test's own thread) and a busy
    /// cooperative pool cannot hold them up.
    static func first<T: Sendable>(
        within timeout: Duration,
        on clock: SecurityAudit.Stopwatch,
        _ operation: @escaping @Sendable () async -> T
    ) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await operation() }
            group.addTask {
                try? await clock.sleep(timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
