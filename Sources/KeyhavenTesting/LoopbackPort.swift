import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Loopback TCP ports for tests: a socket bound to 127.0.0.1 on a port the kernel chose.
public enum LoopbackPort {
    /// A TCP socket bound to 127.0.0.1 on a port the kernel chose, and that port. The caller owns
    /// the descriptor (listens on it, closes it).
    public static func bound() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard bound == 0, named == 0 else {
            close(descriptor)
            throw POSIXError(.EADDRINUSE)
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A port on 127.0.0.1 that nothing listens on (``bound()``, then closed): a site that is down,
    /// or a port to start a server on later. Another process could take it in between; tests use it
    /// where that is harmless or unlikely.
    public static func unused() throws -> Int {
        let (descriptor, port) = try bound()
        close(descriptor)
        return port
    }
}
