import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Loopback TCP sockets as Linux lists them in `/proc/net/tcp` and `/proc/net/tcp6`: who holds a
/// port (``describeHolder(ofPort:sockets:uid:)``) and whose process is at the other end of a
/// connection (``owner(ofClient:connectedTo:in:)``). Every user may read these tables, and each
/// row carries the uid of the socket's owner. Reading them is a file read: call from a thread that
/// may block (NIO's thread pool, an agent's connection thread), never from an event loop.
enum LoopbackTCP {
    /// An address and port: 4 bytes for IPv4 (IPv4-mapped IPv6 addresses are turned into IPv4),
    /// 16 for IPv6, in network order.
    struct Endpoint: Hashable, Sendable {
        var address: [UInt8]
        var port: UInt16

        init(address: [UInt8], port: UInt16) {
            // ::ffff:a.b.c.d is a.b.c.d (a dual-stack socket connected to an IPv4 address).
            if address.count == 16, address[0..<10].allSatisfy({ $0 == 0 }), address[10] == 0xFF,
                address[11] == 0xFF
            {
                self.address = Array(address[12...])
            } else {
                self.address = address
            }
            self.port = port
        }

        /// 127.0.0.1, 0.0.0.0 or :: (any address: it takes the port on 127.0.0.1 too).
        var takesLoopbackV4: Bool {
            address == [127, 0, 0, 1] || address.allSatisfy { $0 == 0 }
        }
    }

    /// One row: the socket's two ends, its state, its owner and its inode.
    struct Socket: Hashable, Sendable {
        var local: Endpoint
        var remote: Endpoint
        var state: UInt8
        var uid: UInt32
        var inode: UInt64

        /// `TCP_LISTEN` in the kernel's numbering.
        static let listening: UInt8 = 0x0A
    }

    /// The rows of one table (`sl local_address rem_address st … uid timeout inode …`); rows that
    /// do not parse are skipped.
    static func parse(_ table: String) -> [Socket] {
        table.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 10, let local = endpoint(fields[1]), let remote = endpoint(fields[2]),
                let state = UInt8(fields[3], radix: 16), let uid = UInt32(fields[7]), let inode = UInt64(fields[9])
            else { return nil }
            return Socket(local: local, remote: remote, state: state, uid: uid, inode: inode)
        }
    }

    /// `0100007F:1F90` → 127.0.0.1:8080. The kernel prints each 32-bit word of the address as the
    /// number its bytes (network order) make in the host's byte order, and the port as a number.
    static func endpoint(_ text: Substring) -> Endpoint? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, parts[0].count == 8 || parts[0].count == 32, let port = UInt16(parts[1], radix: 16)
        else { return nil }
        var bytes: [UInt8] = []
        var index = parts[0].startIndex
        while index < parts[0].endIndex {
            let end = parts[0].index(index, offsetBy: 8)
            guard let word = UInt32(parts[0][index..<end], radix: 16) else { return nil }
            withUnsafeBytes(of: word) { bytes += $0 }
            index = end
        }
        return Endpoint(address: bytes, port: port)
    }

    /// Both tables; nil when neither can be read (no `/proc`: the checks that need them are skipped).
    static func read() -> [Socket]? {
        let tables = ["/proc/net/tcp", "/proc/net/tcp6"].compactMap(contents)
        guard !tables.isEmpty else { return nil }
        return tables.flatMap(parse)
    }

    /// A `/proc` file to its end (they say their size is 0, so it is read until `read` returns 0).
    static func contents(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The uid that owns the client's end of the connection `client` → `server`: the row whose
    /// local end is the client and whose remote end is the server (a TCP connection's four numbers
    /// are unique, so no other socket can pose as it). Nil when no row matches.
    static func owner(ofClient client: Endpoint, connectedTo server: Endpoint, in sockets: [Socket]) -> UInt32? {
        sockets.first { $0.local == client && $0.remote == server && $0.state != Socket.listening }?.uid
    }

    /// The sockets listening on `port` where they keep 127.0.0.1:`port` from us.
    static func listeners(onPort port: Int, in sockets: [Socket]) -> [Socket] {
        sockets.filter { $0.state == Socket.listening && Int($0.local.port) == port && $0.local.takesLoopbackV4 }
    }

    /// Who holds 127.0.0.1:`port`, in words for the person, or nil when nobody is seen there:
    /// another user (refused: nobody is sent to a server that may be theirs) or a program of ours.
    static func describeHolder(ofPort port: Int, sockets: [Socket]? = read(), uid: uid_t = getuid()) -> String? {
        guard let sockets else { return nil }
        let holders = listeners(onPort: port, in: sockets)
        let advice = "Leave out --port (any free port is best; `keyhaven ui` prints the address), or choose another."
        if let other = holders.first(where: { $0.uid != uid }) {
            return "127.0.0.1:\(port) is held by another user (\(userName(other.uid))). Keyhaven does not serve "
                + "the web app there or send you to it, since that server may not be Keyhaven. \(advice)"
        }
        guard let own = holders.first else { return nil }
        let program = process(holding: own.inode).map { " (pid \($0.pid), \($0.name))" } ?? ""
        return "127.0.0.1:\(port) is in use by another program of yours\(program): stop it, or choose another "
            + "port. \(advice)"
    }

    /// `uid 65534 (nobody)`.
    static func userName(_ uid: UInt32) -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, let result,
            let name = result.pointee.pw_name
        else { return "uid \(uid)" }
        return "uid \(uid) (\(String(cString: name)))"
    }

    /// The process (of ours: only those can be looked into) with the socket `inode` open.
    static func process(holding inode: UInt64) -> (pid: Int, name: String)? {
        let target = "socket:[\(inode)]"
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in processes {
            guard let pid = Int(entry) else { continue }
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            for descriptor in descriptors {
                let path = "/proc/\(pid)/fd/\(descriptor)"
                guard (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) == target else { continue }
                let name = contents("/proc/\(pid)/comm")?.trimmingCharacters(in: .whitespacesAndNewlines)
                return (pid, name ?? "?")
            }
        }
        return nil
    }
}
