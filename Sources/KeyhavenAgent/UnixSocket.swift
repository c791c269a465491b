import AutoFill
public import Foundation
public import _KeyhavenSupport

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

/// Unix socket helpers: the agent's directory and socket, with the peer's uid.
public enum UnixSocket {
    /// `$XDG_RUNTIME_DIR/keyhaven/agent.sock` (else `/tmp/keyhaven-UID/agent.sock`).
    public static func defaultPath(environment: [String: String]) -> String {
        let base =
            environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 }.map { "\($0)/keyhaven" }
            ?? "/tmp/keyhaven-\(getuid())"
        return base + "/agent.sock"
    }

    static func address(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else {
            throw AgentError("the socket path is too long (\(bytes.count) bytes, at most \(capacity - 1)): \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    /// Connects to the socket at `path`; nil when nothing listens there.
    public static func connect(to path: String) throws -> FrameConnection? {
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

    /// Creates the socket's directory (0700, refusing one that is not ours or is open to others),
    /// removes a stale socket (nothing answers), binds (0600 from the first moment: umask 077
    /// around the bind) and listens.
    static func listen(at path: String) throws -> Int32 {
        let directory = (path as NSString).deletingLastPathComponent
        // Missing parents ($XDG_RUNTIME_DIR not made yet) are made private too.
        let parent = (directory as NSString).deletingLastPathComponent
        if !parent.isEmpty, !FileManager.default.fileExists(atPath: parent) {
            try? FileManager.default.createDirectory(
                atPath: parent,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        }
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw AgentError("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw AgentError("\(directory) is not a directory")
        }
        guard info.st_uid == getuid() else { throw AgentError("\(directory) belongs to another user") }
        if info.st_mode & 0o077 != 0 {
            guard chmod(directory, 0o700) == 0 else { throw AgentError("cannot make \(directory) private") }
        }
        if let existing = try connect(to: path) {
            existing.shutdownBoth()
            throw AgentError("an agent is already running on \(path)")
        }
        unlink(path)
        var address = try address(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw AgentError("cannot create a socket: \(String(cString: strerror(errno)))") }
        let previous = umask(0o077)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        umask(previous)
        guard bound == 0 else {
            close(fd)
            throw AgentError("cannot listen on \(path): \(String(cString: strerror(errno)))")
        }
        chmod(path, 0o600)
        guard Glibc.listen(fd, 16) == 0 else {
            close(fd)
            throw AgentError("cannot listen on \(path): \(String(cString: strerror(errno)))")
        }
        return fd
    }
}

/// A failure of the agent's process or its socket, with a message a person can act on.
public struct AgentError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
