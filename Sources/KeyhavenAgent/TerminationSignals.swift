import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGTERM, SIGINT and SIGHUP for a process that must act before it ends: `keyhaven agent` locks
/// (drops the unlocked vault) and removes its socket on a logout, `kill PID`, Ctrl-C or
/// `systemctl --user stop` (security review #12).
///
/// A `sigaction` handler that only writes the signal's number to a pipe (`write(2)` is
/// async-signal-safe), and a thread of its own that reads the pipe and calls the handler given to
/// ``watch(_:handler:)``. Not a `DispatchSource`: on Linux, libdispatch reads signals through a
/// `signalfd` that sees nothing once a signal is ignored, and without ignoring it any thread that
/// does not block it ends the process at once. The reading thread unblocks the signals for itself,
/// so there is always a thread to run the handler on, whatever the other threads block.
public enum TerminationSignals {
    /// The signals ``watch(_:handler:)`` takes by default.
    public static let standard: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    /// Calls `handler` with the signal's number and how many of `signals` have arrived so far (1
    /// the first time), on a thread of its own, each time one of them arrives. Once per process.
    /// - Throws: ``AgentError`` when the pipe or the handler cannot be installed.
    public static func watch(
        _ signals: [Int32] = standard,
        handler: @escaping @Sendable (_ signal: Int32, _ count: Int) -> Void
    ) throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw AgentError(.io, "cannot watch for signals: \(String(cString: strerror(errno)))")
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // Written before any handler can run; the handler only reads it.
        signalPipe = ends[1]
        let reader = ends[0]
        let thread = Thread {
            var mask = sigset_t()
            sigemptyset(&mask)
            for number in signals { sigaddset(&mask, number) }
            pthread_sigmask(SIG_UNBLOCK, &mask, nil)
            var received = 0
            while true {
                var byte: UInt8 = 0
                let count = read(reader, &byte, 1)
                if count < 0 && errno == EINTR { continue }
                guard count == 1 else { return }
                received += 1
                handler(Int32(byte), received)
            }
        }
        thread.start()
        for number in signals {
            var action = sigaction()
            #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = forwardSignal
            #else
            action.__sigaction_u.__sa_handler = forwardSignal
            #endif
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            guard sigaction(number, &action, nil) == 0 else {
                throw AgentError(.io, "cannot watch for signal \(number): \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// The write end of ``TerminationSignals``' pipe (set once, before the handler is installed).
nonisolated(unsafe) private var signalPipe: Int32 = -1

/// The signal handler: one byte into the pipe, `errno` kept as it was.
private func forwardSignal(_ number: Int32) {
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(signalPipe, &byte, 1)
    errno = saved
}
