import AutoFill
public import Foundation
public import _KeyhavenSupport

@_exported public import struct _KeyhavenSupport.KeyhavenError

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A connected Unix stream socket (or a pipe pair): blocking reads and writes of whole frames, on
/// the caller's own thread (the agent gives every connection a thread; nothing here runs on Swift's
/// cooperative pool).
public final class FrameConnection: @unchecked Sendable {
    let input: Int32
    let output: Int32
    private let writeLock = NSLock()
    private var reader = FrameReader()
    private let ownsDescriptors: Bool

    /// A socket used both ways.
    public init(socket: Int32) {
        input = socket
        output = socket
        ownsDescriptors = true
    }

    /// Separate descriptors (standard input and output of the browser host), not closed here.
    public init(input: Int32, output: Int32) {
        self.input = input
        self.output = output
        ownsDescriptors = false
    }

    deinit {
        if ownsDescriptors { close(input) }
    }

    /// Writes one frame (length little-endian, as on every machine Keyhaven runs on).
    public func send(_ payload: Data) throws {
        guard payload.count <= Frames.maximumLength, !payload.isEmpty else { throw FrameError(code: .tooLong) }
        let frame = Frames.encode(payload)
        writeLock.lock()
        defer { writeLock.unlock() }
        try frame.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = write(output, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                }
                offset += written
            }
        }
    }

    public func send(_ value: JSONValue) throws {
        try send(value.encoded())
    }

    /// The next frame, nil at the end of the stream. Throws on a frame over 1 MiB, an empty frame or
    /// a stream cut inside a frame.
    public func receive() throws -> Data? {
        while true {
            if let frame = try reader.next() { return frame }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = read(input, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            if count == 0 {
                try reader.finish()
                return nil
            }
            reader.append(Data(buffer[0..<count]))
        }
    }

    /// Tells the other side nothing more will be sent (it reads the end of the stream) while
    /// replies can still come back.
    public func shutdownWrite() {
        shutdown(output, Int32(SHUT_WR))
    }

    /// Ends the connection both ways (a blocked ``receive()`` returns).
    public func shutdownBoth() {
        shutdown(input, Int32(SHUT_RDWR))
    }
}

/// Unix socket helpers: the agent's socket in its checked folder (``AgentRuntimeDirectory``), with
/// the peer's uid checked on both sides.
public enum UnixSocket {
    /// Where the agent's socket is for this environment (see ``AgentRuntimeDirectory``).
    public static func defaultPath(environment: [String: String]) -> String {
        AgentRuntimeDirectory.locate(socket: nil, environment: environment).socketPath
    }

    static func address(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw AgentError(
                .pathTooLong,
                "the socket path is too long (\(bytes.count) bytes, at most \(capacity - 1)): \(path); "
                    + AgentRuntimeDirectory.advice
            )
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    /// Connects to the agent at `location` once its folder passed ``AgentRuntimeDirectory/verify(create:)``
    /// (nothing is created); nil when the folder or the socket is missing or nothing listens.
    ///
    /// - Throws: ``AgentRuntimeDirectoryError`` for a folder that is not the person's own, or
    ///   ``AgentError`` from ``connect(to:)-(String)``: nothing has been sent then.
    public static func connect(to location: AgentRuntimeDirectory) throws -> FrameConnection? {
        guard try location.verify(create: false) else { return nil }
        return try connect(to: location.socketPath)
    }

    /// Connects to the socket at `path`; nil when nothing listens there.
    ///
    /// Before anything can be sent, the socket must be a socket of the person's own (`lstat`), and
    /// the process that accepted the connection must run as the person (`SO_PEERCRED`), so a
    /// master password or a command never goes to another user's program posing as the agent
    /// (security review #6).
    /// - Throws: ``AgentError`` naming the path and the other uid.
    public static func connect(to path: String) throws -> FrameConnection? {
        var info = stat()
        if lstat(path, &info) != 0 {
            let code = errno
            if code == ENOENT { return nil }
            throw AgentError(.io, "cannot inspect \(path): \(String(cString: strerror(code)))")
        }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw AgentError(
                .notASocket,
                "\(path) is not a socket (someone put a file or a link there?): Keyhaven sends nothing to it; "
                    + "remove it (rm \(path)) and start `keyhaven agent` again"
            )
        }
        guard info.st_uid == getuid() else {
            throw AgentError(
                .foreignOwner,
                "\(path) belongs to uid \(info.st_uid), not to you (uid \(getuid())): another user may be posing "
                    + "as your agent, so Keyhaven sent it nothing. Have it removed (its owner or root: rm \(path)), "
                    + "or \(AgentRuntimeDirectory.advice)"
            )
        }
        var address = try address(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard status == 0 else {
            let code = errno
            close(fd)
            if code == ENOENT || code == ECONNREFUSED { return nil }
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        let peer = peerUID(fd)
        guard peer == getuid() else {
            close(fd)
            let who = peer.map { "uid \($0)" } ?? "a process whose uid cannot be read"
            throw AgentError(
                .foreignOwner,
                "the program answering on \(path) runs as \(who), not as you (uid \(getuid())): another user may "
                    + "be posing as your agent, so Keyhaven sent it nothing. Have the socket removed (its owner "
                    + "or root: rm \(path)), or \(AgentRuntimeDirectory.advice)"
            )
        }
        return FrameConnection(socket: fd)
    }

    /// The uid of the process at the other end of a connected Unix socket.
    static func peerUID(_ fd: Int32) -> uid_t? {
        // Linux's `struct ucred` (pid, uid, gid) and `SO_PEERCRED` (17), which Glibc's module
        // hides without _GNU_SOURCE.
        struct PeerCredentials {
            var pid: Int32 = 0
            var uid: UInt32 = 0
            var gid: UInt32 = 0
        }
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, 17, &credentials, &length) == 0,
            length == socklen_t(MemoryLayout<PeerCredentials>.size)
        else { return nil }
        return credentials.uid
    }

    /// Checks (and creates) the socket's folder (``AgentRuntimeDirectory/verify(create:)``: the
    /// person's own, 0700, no link, nothing above it that others can write), removes a stale socket
    /// of the person's own (nothing answers), binds (0600 from the first moment: umask 077 around
    /// the bind) and listens. A file that is not a socket, or another user's socket, is refused.
    ///
    /// - Returns: the listening descriptor and the socket file's inode (``AgentServer`` removes the
    ///   socket when it stops only while that inode is still there).
    static func listen(at location: AgentRuntimeDirectory) throws -> (descriptor: Int32, inode: ino_t) {
        do throws(AgentRuntimeDirectoryError) {
            try location.verify(create: true)
        } catch {
            throw AgentError(.io, "cannot listen on \(location.socketPath): \(error.message)")
        }
        let path = location.socketPath
        if let existing = try connect(to: path) {
            existing.shutdownBoth()
            throw AgentError(.alreadyRunning, "an agent is already running on \(path)")
        }
        // Nothing answers: a socket of ours left by an agent that was killed (`connect` refused
        // anything else).
        unlink(path)
        var address = try address(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw AgentError(.io, "cannot create a socket: \(String(cString: strerror(errno)))") }
        let previous = umask(0o077)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        umask(previous)
        guard bound == 0 else {
            close(fd)
            throw AgentError(.io, "cannot listen on \(path): \(String(cString: strerror(errno)))")
        }
        chmod(path, 0o600)
        var info = stat()
        guard lstat(path, &info) == 0, Glibc.listen(fd, 16) == 0 else {
            close(fd)
            throw AgentError(.io, "cannot listen on \(path): \(String(cString: strerror(errno)))")
        }
        return (fd, info.st_ino)
    }
}

/// A failure of the agent's process or its socket, with a message a person can act on.
public typealias AgentError = KeyhavenError<AgentErrorDomain>

/// The domain of ``AgentError``.
public enum AgentErrorDomain: KeyhavenErrorDomain {}

extension AgentError.Code {
    /// The socket's path does not fit a Unix socket address.
    public static var pathTooLong: Self { Self("pathTooLong") }
    /// Something other than a socket is at the socket's path.
    public static var notASocket: Self { Self("notASocket") }
    /// The socket, or the process answering on it, is another user's: nothing was sent to it.
    public static var foreignOwner: Self { Self("foreignOwner") }
    /// An agent already answers on the socket.
    public static var alreadyRunning: Self { Self("alreadyRunning") }
    /// The operating system refused (a socket, a bind, a signal handler).
    public static var io: Self { Self("io") }
}
