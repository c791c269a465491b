public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The folder that holds the agent's socket, and files that belong beside it (`agent.log`), with
/// the checks every Keyhaven process makes before it trusts that folder (security review #6).
///
/// Where it is (the first that applies):
/// 1. the socket the person chose, `--socket` or `$KEYHAVEN_AGENT_SOCKET` (``Kind/chosen``);
/// 2. `$XDG_RUNTIME_DIR/keyhaven/agent.sock` (``Kind/runtime``), the usual case in a desktop or
///    `pam_systemd` session;
/// 3. without `$XDG_RUNTIME_DIR` (`su`, ssh without `pam_systemd`, cron, containers):
///    `$XDG_STATE_HOME/keyhaven/run/agent.sock`, else `~/.local/state/keyhaven/run/agent.sock`
///    (``Kind/home``).
///
/// Why the fallback is under the person's home and not the shared temporary folder (where
/// `/tmp/keyhaven-UID` was): in a folder every user can write, another user can create the
/// predictable name first. A client that checks would then refuse, so that user could still keep
/// the person's agent from ever starting (and `/tmp` cleaners remove the socket of an agent that
/// runs for weeks). Nobody else can create anything in a home, so nobody can squat there. OpenSSH
/// made the same move for ssh-agent's sockets (10.1: from `/tmp` to `~/.ssh/agent`). The cost is
/// `sun_path`'s 108 bytes: a socket path longer than 107 bytes is refused with a message saying to
/// set `$XDG_RUNTIME_DIR` or `$KEYHAVEN_AGENT_SOCKET` to a shorter one (`/root/.local/state/
/// keyhaven/run/agent.sock` is 42 bytes). A home shared by several machines (NFS) without
/// `$XDG_RUNTIME_DIR` should set `$KEYHAVEN_AGENT_SOCKET` per machine.
///
/// The checks (``verify(create:)``), made by the agent before it listens and by every client
/// before it connects:
/// - the agent's own folder (``Kind/runtime``, ``Kind/home``): a real folder (`lstat`: not a
///   symbolic link), owned by the person, mode exactly 0700. Anything else is refused, never
///   repaired: a folder that was open to others may hold what they put there;
/// - `$XDG_RUNTIME_DIR` itself is the person's (after `su` it may still name another user's);
/// - the chosen socket's folder and every folder above the agent's folder, as written and as
///   resolved: owned by the person or root, and writable by no one else (the sticky bit of
///   `/tmp` excepted, and a group write bit when the group is the person's own private group), so
///   that no other user can rename the folder away and put their own in its place after the check.
///
/// Clients then check the socket itself and, once connected, the peer's uid (`SO_PEERCRED`)
/// before they send anything (`UnixSocket.connect` in KeyhavenAgent).
///
/// ```swift
/// let runtime = try AgentRuntimeDirectory.verified(socket: nil, environment: environment)
/// try PrivateFile.create(at: runtime.file(named: "launch.html"), contents: bytes)
/// ```
public struct AgentRuntimeDirectory: Sendable, Hashable, CustomStringConvertible {
    /// How the socket's place was chosen, which decides how strictly its folder is checked.
    public enum Kind: Sendable, Hashable {
        /// `--socket` or `$KEYHAVEN_AGENT_SOCKET`: a folder the person picked (it may be shared by
        /// design, as a home folder of mode 0755 is); it must not be writable by other users.
        case chosen
        /// `$XDG_RUNTIME_DIR/keyhaven`: a folder of Keyhaven's own, 0700.
        case runtime
        /// `$XDG_STATE_HOME/keyhaven/run` (`~/.local/state/keyhaven/run`): a folder of Keyhaven's own, 0700.
        case home
    }

    /// The longest socket path a Unix socket address holds (`sun_path` is 108 bytes with its NUL).
    public static let maximumSocketPathLength = 107

    /// The agent's socket.
    public let socketPath: String
    public let kind: Kind
    /// `$XDG_RUNTIME_DIR` for ``Kind/runtime`` (checked to be the person's).
    let runtimeBase: String?

    /// The folder that holds the socket.
    public var path: String { (socketPath as NSString).deletingLastPathComponent }

    /// The folder that holds the socket, as a URL.
    public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// A file beside the socket (`agent.log`, the web app's launch file). Create it with
    /// ``PrivateFile`` or `O_NOFOLLOW` after ``verify(create:)``.
    public func file(named name: String) -> URL { url.appendingPathComponent(name) }

    public var description: String { path }

    /// A socket the person chose (`--socket`, `$KEYHAVEN_AGENT_SOCKET`, a test's own path).
    public init(chosenSocket path: String) {
        socketPath = Self.absolute(path)
        kind = .chosen
        runtimeBase = nil
    }

    init(socketPath: String, kind: Kind, runtimeBase: String?) {
        self.socketPath = socketPath
        self.kind = kind
        self.runtimeBase = runtimeBase
    }

    /// Where the agent's socket is for `socket` (an explicit `--socket`, or nil) and the
    /// environment (`KEYHAVEN_AGENT_SOCKET`, `XDG_RUNTIME_DIR`, `XDG_STATE_HOME`, `HOME`). Checks
    /// nothing; see ``verify(create:)``.
    public static func locate(socket: String?, environment: [String: String]) -> AgentRuntimeDirectory {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if let socket, !socket.isEmpty { return AgentRuntimeDirectory(chosenSocket: socket) }
        if let socket = value("KEYHAVEN_AGENT_SOCKET") { return AgentRuntimeDirectory(chosenSocket: socket) }
        if let runtime = value("XDG_RUNTIME_DIR") {
            let base = absolute(runtime)
            return AgentRuntimeDirectory(
                socketPath: (base as NSString).appendingPathComponent("keyhaven/agent.sock"),
                kind: .runtime,
                runtimeBase: base
            )
        }
        let home = value("HOME") ?? NSHomeDirectory()
        let state = value("XDG_STATE_HOME") ?? (home as NSString).appendingPathComponent(".local/state")
        return AgentRuntimeDirectory(
            socketPath: (absolute(state) as NSString).appendingPathComponent("keyhaven/run/agent.sock"),
            kind: .home,
            runtimeBase: nil
        )
    }

    /// ``locate(socket:environment:)``, created when missing and checked: the folder every
    /// Keyhaven process may use for the socket and the files beside it.
    ///
    /// - Throws: ``AgentRuntimeDirectoryError`` saying what is wrong and what to do.
    public static func verified(
        socket: String?,
        environment: [String: String]
    ) throws(AgentRuntimeDirectoryError) -> AgentRuntimeDirectory {
        let location = locate(socket: socket, environment: environment)
        _ = try location.verify(create: true)
        return location
    }

    /// Checks the folder (see the type's documentation) and, with `create`, makes it first when
    /// missing (mode 0700, missing parents too).
    ///
    /// - Returns: false when the folder does not exist and `create` is false (then no agent can
    ///   listen there); true when it exists and passed every check.
    /// - Throws: ``AgentRuntimeDirectoryError`` saying what is wrong and what to do.
    @discardableResult
    public func verify(create: Bool) throws(AgentRuntimeDirectoryError) -> Bool {
        guard socketPath.utf8.count <= Self.maximumSocketPathLength else {
            throw AgentRuntimeDirectoryError(
                .tooLong,
                "the agent's socket path \(socketPath) is \(socketPath.utf8.count) bytes, longer than a Unix "
                    + "socket allows (\(Self.maximumSocketPathLength)): \(Self.advice)"
            )
        }
        var status = stat()
        if lstat(path, &status) != 0 {
            let code = errno
            guard code == ENOENT else { throw Self.ioError("cannot inspect \(path)", code) }
            guard create else { return false }
            try make()
            guard lstat(path, &status) == 0 else { throw Self.ioError("cannot inspect \(path)", errno) }
        }
        try checkFoldersAbove()
        if kind != .chosen { try checkOwn(status) }
        return true
    }

    // MARK: Checks

    /// The agent's own folder: a real folder, the person's, mode exactly 0700.
    private func checkOwn(_ status: stat) throws(AgentRuntimeDirectoryError) {
        let type = status.st_mode & S_IFMT
        guard type != S_IFLNK else {
            throw AgentRuntimeDirectoryError(
                .symbolicLink,
                "\(path) is a symbolic link; the agent's folder must be a real folder of yours (a link can "
                    + "lead into another user's folder). Remove it (rm \(path)) and start the agent again, or "
                    + Self.advice
            )
        }
        guard type == S_IFDIR else {
            throw AgentRuntimeDirectoryError(
                .notAFolder,
                "\(path) is not a folder; remove it (rm \(path)) and start the agent again, or \(Self.advice)"
            )
        }
        guard status.st_uid == getuid() else {
            throw AgentRuntimeDirectoryError(
                .foreignOwner,
                "\(path) belongs to uid \(status.st_uid), not to you (uid \(getuid())): whoever owns it could pose "
                    + "as your agent, so Keyhaven sends nothing there. Have it removed (its owner or root: "
                    + "rm -r \(path)), or \(Self.advice)"
            )
        }
        let mode = status.st_mode & 0o7777
        guard mode == 0o700 else {
            throw AgentRuntimeDirectoryError(
                .openToOthers,
                "\(path) has mode \(String(mode, radix: 8)), not 700: other users may have put files in it, "
                    + "so Keyhaven does not use it. Remove it (rm -r \(path)) and start the agent again, or "
                    + Self.advice
            )
        }
    }

    /// Every folder above the agent's folder (and `$XDG_RUNTIME_DIR` is the person's).
    private func checkFoldersAbove() throws(AgentRuntimeDirectoryError) {
        // The agent's own folder is checked with `lstat` apart; a chosen socket's folder is one of
        // these (it may be a link the person made: the folder it leads to is checked too).
        let top = kind == .chosen ? path : (path as NSString).deletingLastPathComponent
        var folders = Self.prefixes(of: top)
        if let resolved = Self.resolved(top), resolved != top {
            folders += Self.prefixes(of: resolved).filter { !folders.contains($0) }
        }
        for folder in folders {
            var status = stat()
            guard stat(folder, &status) == 0 else { throw Self.ioError("cannot inspect \(folder)", errno) }
            try Self.checkShared(folder, status: status)
        }
        if kind == .runtime, let base = runtimeBase {
            var status = stat()
            guard stat(base, &status) == 0 else { throw Self.ioError("cannot inspect \(base)", errno) }
            guard status.st_uid == getuid() else {
                throw AgentRuntimeDirectoryError(
                    .foreignOwner,
                    "XDG_RUNTIME_DIR (\(base)) belongs to uid \(status.st_uid), not to you (uid \(getuid())); "
                        + "it is another user's (after su?), so Keyhaven does not use it. Unset XDG_RUNTIME_DIR "
                        + "or set it to your own (normally /run/user/\(getuid())), or set KEYHAVEN_AGENT_SOCKET "
                        + "to a path in a folder only you can write"
                )
            }
        }
    }

    /// A folder others may read but not change: owned by the person or root, writable by no one
    /// else unless it is sticky (`/tmp`) or its group is the person's own private group.
    static func checkShared(_ folder: String, status: stat) throws(AgentRuntimeDirectoryError) {
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw AgentRuntimeDirectoryError(.notAFolder, "\(folder) is not a folder: \(advice)")
        }
        guard status.st_uid == getuid() || status.st_uid == 0 else {
            throw AgentRuntimeDirectoryError(
                .foreignOwner,
                "\(folder) belongs to uid \(status.st_uid), not to you (uid \(getuid())) or root: its owner could "
                    + "put their own agent in place of yours, so Keyhaven does not use it. \(advice.capitalizedFirst)"
            )
        }
        let sticky = status.st_mode & mode_t(0o1000) != 0
        let othersWrite = status.st_mode & 0o002 != 0
        let groupWrite = status.st_mode & 0o020 != 0 && !isPrivateGroup(status.st_gid)
        guard sticky || (!othersWrite && !groupWrite) else {
            throw AgentRuntimeDirectoryError(
                .openToOthers,
                "\(folder) can be written by other users (mode \(String(status.st_mode & 0o7777, radix: 8))): they "
                    + "could put their own agent in place of yours, so Keyhaven does not use it. Make it "
                    + "private (chmod go-w \(folder)), or \(advice)"
            )
        }
    }

    /// The person's own private group (user private groups: same name as the user, the primary
    /// group), whose write bit gives no one else access.
    static func isPrivateGroup(_ gid: gid_t) -> Bool {
        guard gid == getgid(), let group = getgrgid(gid), let user = getpwuid(getuid()) else { return false }
        guard String(cString: group.pointee.gr_name) == String(cString: user.pointee.pw_name) else { return false }
        // No one is listed as a secondary member.
        return group.pointee.gr_mem == nil || group.pointee.gr_mem.pointee == nil
    }

    // MARK: Making it

    /// Creates the missing folders (0700); the last one is made 0700 whatever the umask.
    private func make() throws(AgentRuntimeDirectoryError) {
        let parent = (path as NSString).deletingLastPathComponent
        do throws(PrivateFileError) {
            try PrivateFile.createDirectory(at: URL(fileURLWithPath: parent, isDirectory: true))
        } catch {
            throw AgentRuntimeDirectoryError(.io, "\(error.message); \(Self.advice)")
        }
        if mkdir(path, 0o700) == 0 {
            // Ours since this moment and in a folder checked below: the umask may have taken bits.
            chmod(path, 0o700)
        } else if errno != EEXIST {
            throw Self.ioError("cannot create \(path)", errno)
        }
    }

    // MARK: Paths

    /// What to do when the folder is refused (the end of every message).
    public static let advice =
        "set XDG_RUNTIME_DIR to your own runtime folder (normally /run/user/UID), or KEYHAVEN_AGENT_SOCKET to a "
        + "socket path in a folder only you can write"

    static func absolute(_ path: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        let full =
            expanded.hasPrefix("/")
            ? expanded : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(expanded)
        // `.` and `..` removed as written (no link is resolved: the checks see what is there).
        return URL(fileURLWithPath: full).standardized.path
    }

    /// "/", "/a", "/a/b" for "/a/b".
    static func prefixes(of path: String) -> [String] {
        var result = ["/"]
        var current = ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            current += "/" + component
            result.append(current)
        }
        return result
    }

    /// `realpath(3)`, nil when it fails.
    static func resolved(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    static func ioError(_ what: String, _ code: Int32) -> AgentRuntimeDirectoryError {
        AgentRuntimeDirectoryError(.io, "\(what): \(String(cString: strerror(code)))")
    }
}

extension String {
    fileprivate var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}

/// The agent's folder cannot be trusted (or made). The message names the path, what is wrong and
/// what to do; never anything secret.
public typealias AgentRuntimeDirectoryError = KeyhavenError<AgentRuntimeDirectoryErrorDomain>

/// The domain of ``AgentRuntimeDirectoryError``.
public enum AgentRuntimeDirectoryErrorDomain: KeyhavenErrorDomain {}

extension AgentRuntimeDirectoryError.Code {
    /// The folder (or one above it) belongs to another user.
    public static var foreignOwner: Self { Self("foreignOwner") }
    /// The folder is not 0700, or one above it can be written by other users.
    public static var openToOthers: Self { Self("openToOthers") }
    /// The agent's folder is a symbolic link.
    public static var symbolicLink: Self { Self("symbolicLink") }
    /// Something other than a folder is where a folder should be.
    public static var notAFolder: Self { Self("notAFolder") }
    /// The socket path does not fit a Unix socket address.
    public static var tooLong: Self { Self("tooLong") }
    /// The operating system refused (a missing permission, a read-only file system).
    public static var io: Self { Self("io") }
}
