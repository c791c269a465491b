import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback HTTP stand-in for a server that stalls: a request it has no scripted answer for gets
/// its status line and headers (a chunked body, so no length a client could refuse up front) and
/// a first chunk of one byte, then nothing more (``Stall/silent``) or one more byte every 200 ms for
/// ever (``Stall/trickle``, a server no read timeout catches): the connection stays open until the
/// client closes it or ``close()``. What a client must survive: its request deadline ended when the
/// headers arrived, and only a deadline on reading the body ends the wait. ``closedByClient`` says
/// whether the client then let the connection go (the server read end-of-file). A scripted answer
/// (by path) is sent whole, with `Connection: close`. Raw sockets on threads of its own (no event
/// loop a client under test shares).
public final class StallingHTTPServer: Sendable {
    /// A whole answer: its status line's code and reason (`200 OK`) and its JSON body.
    public typealias Answer = (status: String, json: String)

    /// What a stalled answer does after its first byte of body.
    public enum Stall: Sendable {
        /// Nothing more.
        case silent
        /// One more byte (a space) every 200 ms, for ever.
        case trickle
    }

    /// The port on 127.0.0.1 it listens on.
    public let port: Int
    /// `http://127.0.0.1:PORT`.
    public var url: String { "http://127.0.0.1:\(port)" }
    private let state: State

    private final class State: Sendable {
        let listener: Int32
        /// The open connections; nil once closed.
        let connections = Mutex<[Int32]?>([])
        /// The paths of the requests it stalled.
        let stalled = Mutex<[String]>([])
        /// The paths of the stalled requests whose connection the client closed.
        let closedByClient = Mutex<[String]>([])
        init(listener: Int32) { self.listener = listener }
        var isOpen: Bool { connections.withLock { $0 != nil } }
    }

    /// Listens now. `answer` gives the whole answer to a request for a path (with its query), or
    /// nil to stall it after `status` (`200 OK`) and its headers.
    public init(
        status: String = "200 OK",
        stall: Stall = .silent,
        answer: @escaping @Sendable (_ path: String) -> Answer? = { _ in nil }
    ) throws {
        let (listener, port) = try LoopbackPort.bound()
        guard listen(listener, 16) == 0 else {
            closeDescriptor(listener)
            throw POSIXError(.EADDRINUSE)
        }
        self.port = port
        let state = State(listener: listener)
        self.state = state
        let stallingHead = Array(
            "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n".utf8
        )
        Thread.detachNewThread {
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }  // closed
                let kept = state.connections.withLock { open in
                    open?.append(connection)
                    return open != nil
                }
                guard kept else {
                    closeDescriptor(connection)
                    return
                }
                let path = Self.readRequest(connection)
                if let (status, json) = answer(path) {
                    let bytes = Array(
                        ("HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n"
                            + "Connection: close\r\n\r\n\(json)").utf8
                    )
                    Self.transmit(bytes, to: connection)
                    shutdown(connection, Int32(SHUT_WR))
                } else {
                    state.stalled.withLock { $0.append(path) }
                    Self.transmit(stallingHead, to: connection)
                    Thread.detachNewThread { Self.watch(connection, path: path, trickling: stall == .trickle, state) }
                }
            }
        }
    }

    /// The paths of the requests it stalled, in order.
    public var stalledPaths: [String] { state.stalled.withLock { $0 } }

    /// The paths of the stalled requests whose connection the client closed (the server read
    /// end-of-file, or could no longer send), in the order it noticed.
    public var closedByClient: [String] { state.closedByClient.withLock { $0 } }

    /// Waits (polling every 50 ms) until the client has closed `count` stalled connections, at most
    /// `limit`; whether it did.
    public func clientClosed(count: Int = 1, within limit: Duration) async -> Bool {
        let end = ContinuousClock.now + limit
        while closedByClient.count < count {
            guard ContinuousClock.now < end else { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return true
    }

    /// Stops listening and closes every connection (once; later calls do nothing).
    public func close() {
        guard
            let open = state.connections.withLock({ open in
                defer { open = nil }
                return open
            })
        else { return }
        shutdown(state.listener, Int32(SHUT_RDWR))
        closeDescriptor(state.listener)
        for connection in open {
            shutdown(connection, Int32(SHUT_RDWR))
            closeDescriptor(connection)
        }
    }

    deinit { close() }

    /// Reads a request's head and its body (by `Content-Length`); returns its path.
    private static func readRequest(_ connection: Int32) -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        let end = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        var needed = Int.max
        while received.count < needed {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { break }
            received += buffer[0..<count]
            if headEnd == nil, let range = received.firstRange(of: end) {
                headEnd = range.upperBound
                let head = String(decoding: received[..<range.lowerBound], as: UTF8.self).lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
                needed = range.upperBound + (length ?? 0)
            }
        }
        let line = String(decoding: received.prefix { $0 != 13 }, as: UTF8.self)
        let parts = line.split(separator: " ")
        return parts.count > 1 ? String(parts[1]) : ""
    }

    /// Sends `bytes` (blocking until the client took them or went away; never a SIGPIPE); whether
    /// all of them went.
    @discardableResult
    private static func transmit(_ bytes: [UInt8], to connection: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes {
                send(connection, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// Watches a stalled connection until the client closes it (end-of-file, a reset, or a send
    /// that fails) or the server is closed; trickling, sends a byte of body every 200 ms meanwhile.
    private static func watch(_ connection: Int32, path: String, trickling: Bool, _ state: State) {
        let chunk = Array("1\r\n \r\n".utf8)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while state.isOpen {
            var descriptor = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 200)
            guard state.isOpen else { return }
            if ready < 0 && errno == EINTR { continue }
            let gone: Bool
            if ready == 0 {
                gone = trickling && !transmit(chunk, to: connection)
            } else {
                // Readable: what a client may still send, or its end-of-file (0) or a reset (-1).
                gone = ready < 0 || read(connection, &buffer, buffer.count) <= 0
            }
            if gone {
                state.closedByClient.withLock { $0.append(path) }
                return
            }
        }
    }
}

private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}
