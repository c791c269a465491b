import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A one-line progress display on standard error, shown only when it is a terminal, redrawn at most
/// five times a second.
final class ProgressBar: @unchecked Sendable {
    // Guarded by `lock`.
    private var lastDraw = Date.distantPast
    private var lastPhase = ""
    private let lock = NSLock()
    let enabled: Bool

    init(enabled: Bool = isatty(2) == 1) {
        self.enabled = enabled
    }

    func update(_ phase: String, done: Int, total: Int, unit: String = "") {
        guard enabled else { return }
        lock.withLock {
            let now = Date()
            guard phase != lastPhase || now.timeIntervalSince(lastDraw) >= 0.2 || done >= total else { return }
            lastDraw = now
            lastPhase = phase
            let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 0
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            let text =
                "\r\(phase) [\(bar)] \(Int(fraction * 100))% \(Self.format(done, unit))/\(Self.format(total, unit))"
            CommandIO.current.writeError(Data(text.utf8))
        }
    }

    func finish() {
        guard enabled else { return }
        CommandIO.current.writeError(Data("\r\u{1B}[K".utf8))
    }

    static func format(_ value: Int, _ unit: String) -> String {
        let units = unit == "B" ? ["B", "KB", "MB", "GB", "TB"] : ["", "K", "M", "G", "T"]
        var number = Double(value)
        var index = 0
        while number >= 1000 && index < units.count - 1 {
            number /= 1000
            index += 1
        }
        return index == 0 ? "\(value)\(units[0])" : String(format: "%.1f%@", number, units[index])
    }
}
