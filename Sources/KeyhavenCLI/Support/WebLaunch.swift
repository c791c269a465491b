import Foundation
import KeyhavenAgent

#if canImport(Glibc)
import Glibc
#endif

/// What the agent answered to `agent.ui`, checked before anything is printed or opened, so
/// `keyhaven ui` never sends the person to a server it did not verify is the agent's own web app:
/// the URL is a launch URL on 127.0.0.1 at the port the agent itself bound (and the one asked for
/// with --port), and the launch file is a private file of ours in the agent's runtime folder (the
/// socket's folder), which is what a browser is given (security review #3: the URL itself never
/// becomes an argument).
struct WebLaunch {
    /// `http://127.0.0.1:PORT/launch?secret=…` (printed: standard output is the person's).
    var url: String
    var port: Int
    /// The redirect file to open, when one was asked for.
    var file: URL?

    init(_ answer: AgentReply.WebAppLaunch, port requested: Int, socketPath: String, file wanted: Bool) throws {
        let port = answer.port
        guard Self.isLaunchURL(answer.url, port: port) else {
            // Never the URL itself in the message: it may carry a secret.
            throw Output.failure("the agent answered with an address that is not its web app's; nothing was opened")
        }
        guard requested == 0 || port == requested else {
            throw Output.failure(
                "the agent serves the web app on 127.0.0.1:\(port), not \(requested): leave out --port, or stop the "
                    + "agent (`keyhaven agent stop`) and run `keyhaven ui --port \(requested)` again"
            )
        }
        self.url = answer.url
        self.port = port
        guard wanted else { return }
        guard let path = answer.launchFile else {
            throw Output.failure(
                "the agent wrote no launch file; run `keyhaven ui --no-open` and open the URL yourself"
            )
        }
        let folder = URL(fileURLWithPath: socketPath).deletingLastPathComponent()
        if let problem = Self.problem(launchFile: path, folder: folder) {
            throw Output.failure("\(problem); nothing was opened")
        }
        file = URL(fileURLWithPath: path)
    }

    /// `http://127.0.0.1:PORT/launch?secret=BASE64URL`, exactly.
    static func isLaunchURL(_ url: String, port: Int) -> Bool {
        let prefix = "http://127.0.0.1:\(port)/launch?secret="
        guard (1...65535).contains(port), url.hasPrefix(prefix) else { return false }
        let secret = url.dropFirst(prefix.count)
        return !secret.isEmpty
            && secret.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
    }

    /// Why `path` is not a launch file the agent wrote for us (nil when it is): a regular file
    /// `launch-….html` directly in `folder`, ours, mode 0600, in a folder of ours that nobody else
    /// can enter.
    static func problem(launchFile path: String, folder: URL) -> String? {
        let file = URL(fileURLWithPath: path)
        let name = file.lastPathComponent
        guard file.deletingLastPathComponent().standardizedFileURL.path == folder.standardizedFileURL.path,
            name.hasPrefix("launch-"), name.hasSuffix(".html"), !name.contains("/")
        else { return "the agent's launch file \(path) is not in its folder \(folder.path)" }
        var status = stat()
        guard lstat(folder.path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR, status.st_uid == getuid(),
            status.st_mode & 0o077 == 0
        else { return "the agent's folder \(folder.path) is not a private folder of yours (mode 0700)" }
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_uid == getuid(),
            status.st_mode & 0o777 == 0o600
        else { return "the agent's launch file \(path) is not a private file of yours (mode 0600)" }
        return nil
    }
}
