import Synchronization

/// Wakes long polls when their account changes: each account has a version that every accepted
/// write raises; a waiter names the version it has seen and resumes as soon as a later one exists
/// (or when its task is cancelled). Waiters are kept per account, so a write looks only at its own
/// account's. In process only: instances sharing one database wake their own waiters, and the
/// others' see the write at their next re-check.
final class ChangeNotifier: Sendable {
    private enum Entry {
        case registered
        case waiting(CheckedContinuation<Void, Never>)
        case cancelled
    }

    private struct State {
        var versions: [String: UInt64] = [:]
        var waiters: [String: [UInt64: Entry]] = [:]
        var nextID: UInt64 = 0

        mutating func remove(_ id: UInt64, of account: String) {
            waiters[account]?[id] = nil
            if waiters[account]?.isEmpty == true { waiters[account] = nil }
        }
    }

    private let state = Mutex(State())

    /// The account's current version (0 until its first write here).
    func version(of account: String) -> UInt64 {
        state.withLock { $0.versions[account] ?? 0 }
    }

    /// Raises the account's version and wakes its waiters.
    func notify(_ account: String) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.versions[account, default: 0] += 1
            var woken: [CheckedContinuation<Void, Never>] = []
            for (id, entry) in state.waiters[account] ?? [:] {
                if case .waiting(let continuation) = entry {
                    woken.append(continuation)
                    state.remove(id, of: account)
                }
            }
            return woken
        }
        for continuation in woken { continuation.resume() }
    }

    /// Returns once the account's version is beyond `seen`, or the task is cancelled.
    func wait(for account: String, beyond seen: UInt64) async {
        let id = state.withLock { state in
            state.nextID += 1
            state.waiters[account, default: [:]][state.nextID] = .registered
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    guard case .registered = state.waiters[account]?[id], (state.versions[account] ?? 0) <= seen else {
                        state.remove(id, of: account)
                        return true
                    }
                    state.waiters[account]?[id] = .waiting(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                switch state.waiters[account]?[id] {
                case .waiting(let continuation):
                    state.remove(id, of: account)
                    return continuation
                case .registered:
                    state.waiters[account]?[id] = .cancelled
                    return nil
                case .cancelled, nil:
                    return nil
                }
            }
            continuation?.resume()
        }
    }

    /// Waiters not resumed yet (tests: none may be left behind).
    var waiting: Int { state.withLock { $0.waiters.values.reduce(0) { $0 + $1.count } } }
}
