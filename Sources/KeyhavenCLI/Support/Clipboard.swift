import Crypto
import Foundation
import _KeyhavenSupport

/// The desktop clipboard through the usual command-line tools: `wl-copy`/`wl-paste` on Wayland
/// (when `WAYLAND_DISPLAY` is set), else `xclip`, else `xsel`, whichever is on `PATH`. What is
/// copied goes to the tool's standard input, never its arguments (which other local users can read).
struct Clipboard {
    /// `name` as the hidden `clear-clipboard` command is told it.
    var name: String
    var copy: (executable: URL, arguments: [String])
    var paste: (executable: URL, arguments: [String])
    /// How to empty the clipboard (with empty standard input).
    var clear: (executable: URL, arguments: [String])

    /// The first tool that is installed, or nil.
    static func find(environment: [String: String]) -> Clipboard? {
        let wayland = !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
        for name in (wayland ? ["wl-copy"] : []) + ["xclip", "xsel"] {
            if let found = named(name, environment: environment) { return found }
        }
        return nil
    }

    /// The tool `name` (`wl-copy`, `xclip` or `xsel`), if installed.
    static func named(_ name: String, environment: [String: String]) -> Clipboard? {
        func which(_ program: String) -> URL? {
            for directory in (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
                let path = "\(directory)/\(program)"
                if FileManager.default.isExecutableFile(atPath: path) { return URL(fileURLWithPath: path) }
            }
            return nil
        }
        switch name {
        case "wl-copy":
            guard let copy = which("wl-copy"), let paste = which("wl-paste") else { return nil }
            return Clipboard(
                name: name,
                copy: (copy, []),
                paste: (paste, ["--no-newline"]),
                clear: (copy, ["--clear"])
            )
        case "xclip":
            guard let tool = which("xclip") else { return nil }
            return Clipboard(
                name: name,
                copy: (tool, ["-selection", "clipboard"]),
                paste: (tool, ["-selection", "clipboard", "-o"]),
                clear: (tool, ["-selection", "clipboard"])
            )
        case "xsel":
            guard let tool = which("xsel") else { return nil }
            return Clipboard(
                name: name,
                copy: (tool, ["--clipboard", "--input"]),
                paste: (tool, ["--clipboard", "--output"]),
                clear: (tool, ["--clipboard", "--clear"])
            )
        default:
            return nil
        }
    }

    /// What to tell someone who has none of the tools.
    static let installAdvice =
        "no clipboard tool found: install wl-clipboard (Wayland) or xclip or xsel (X11), "
        + "or print the secret with `keyhaven show ACCOUNT --reveal` / `keyhaven otp ACCOUNT`"

    /// Puts `text` on the clipboard.
    func put(_ text: String, environment: [String: String]) throws {
        let status = try Self.run(copy, input: Data(text.utf8), environment: environment)
        guard status == 0 else {
            throw Output.failure("\(copy.executable.lastPathComponent) failed (exit status \(status))")
        }
    }

    /// What the clipboard holds, or nil when it cannot be read.
    func contents(environment: [String: String]) -> Data? {
        let process = Process()
        process.executableURL = paste.executable
        process.arguments = paste.arguments
        process.environment = environment
        let output = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return process.terminationStatus == 0 ? data : nil
    }

    /// Empties the clipboard.
    func empty(environment: [String: String]) {
        _ = try? Self.run(clear, input: Data(), environment: environment)
    }

    /// SHA-256 of what was copied, which the clearing child compares (in constant time) with what
    /// the clipboard then holds: the secret itself never leaves this process but to the tool.
    static func digest(_ data: Data) -> String {
        Hex.encode(Array(SHA256.hash(data: data)))
    }

    /// Whether the clipboard's `contents` are what was copied (`digest`).
    static func holds(_ contents: Data, digest: String) -> Bool {
        // Some tools add a line ending on paste.
        let candidates = [contents] + (contents.last == UInt8(ascii: "\n") ? [contents.dropLast()] : [])
        return candidates.contains { constantTimeEqual(Self.digest(Data($0)), digest) }
    }

    private static func run(
        _ command: (executable: URL, arguments: [String]),
        input: Data,
        environment: [String: String]
    ) throws -> Int32 {
        let process = Process()
        process.executableURL = command.executable
        process.arguments = command.arguments
        process.environment = environment
        let pipe = Pipe()
        process.standardInput = pipe
        // The tools may stay in the background to serve the selection: never hold our output open.
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        pipe.fileHandleForWriting.write(input)
        try? pipe.fileHandleForWriting.close()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
