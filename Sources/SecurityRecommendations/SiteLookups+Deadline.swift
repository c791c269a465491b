import Synchronization

extension SiteLookups {
    /// `operation`'s result, or nil once `timeout` has passed on `clock` or the caller is
    /// cancelled — without waiting for `operation` to notice: it is cancelled and left to end on
    /// its own. So the time per site holds even for a lookup stuck where cancellation does not
    /// reach at once (a resolver waiting out a lost answer, a connection being torn down).
    static func first<T: Sendable>(
        within timeout: Duration,
        on clock: SecurityAudit.Stopwatch,
        _ operation: @escaping @Sendable () async -> T
    ) async -> T? {
        let race = Race<T>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard race.begin(continuation) else { return }
                race.hold(
                    Task { race.finish(await operation()) },
                    Task {
                        try? await clock.sleep(timeout)
                        race.finish(nil)
                    }
                )
            }
        } onCancel: {
            race.finish(nil)
        }
    }
}

/// A lookup and its deadline: whichever ends first resumes the waiting caller, once, and cancels
/// the other.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T?, Never>?
        var over = false
        var tasks: [Task<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Takes the caller's continuation; false when the race is already over (the caller was
    /// cancelled first: resumed with nil).
    func begin(_ continuation: CheckedContinuation<T?, Never>) -> Bool {
        let over = state.withLock { state -> Bool in
            if !state.over { state.continuation = continuation }
            return state.over
        }
        if over { continuation.resume(returning: nil) }
        return !over
    }

    /// The tasks to cancel when it is over (at once if it is).
    func hold(_ tasks: Task<Void, Never>...) {
        let over = state.withLock { state -> Bool in
            if !state.over { state.tasks = tasks }
            return state.over
        }
        if over { for task in tasks { task.cancel() } }
    }

    /// Ends the race with `value` (the first call only).
    func finish(_ value: T?) {
        let ended = state.withLock { state -> (CheckedContinuation<T?, Never>?, [Task<Void, Never>])? in
            guard !state.over else { return nil }
            state.over = true
            defer { (state.continuation, state.tasks) = (nil, []) }
            return (state.continuation, state.tasks)
        }
        guard let (continuation, tasks) = ended else { return }
        continuation?.resume(returning: value)
        for task in tasks { task.cancel() }
    }
}
