import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Websites that answer slowly, each on a loopback port of its own (a site per origin): stand-ins
/// for the sites an audit asks when the network is slow. Every request gets its answer after
/// `delay` — a plain HTTP/1.1 response, then the connection closes. Plain sockets and threads, so
/// any test target can use it.
///
/// ```swift
/// let sites = try StandInSites(count: 8, delay: .seconds(5))
/// defer { sites.stop() }
/// // credentials on sites.origins (http://127.0.0.1:PORT: probes may use http on loopback)
/// ```
public final class StandInSites: Sendable {
    /// What a site answers to one path.
    public struct Answer: Sendable {
        public var status: Int
        public var location: String?
        public var body: String

        public init(status: Int, location: String? = nil, body: String = "") {
            self.status = status
            self.location = location
            self.body = body
        }

        public static let notFound = Answer(status: 404)
    }

    /// `http://127.0.0.1:PORT`, one per site.
    public let origins: [String]
    private let descriptors: [Int32]
    private let delay: Duration
    private let answer: @Sendable (_ path: String) -> Answer
    private let state = Mutex((stopped: false, requests: [String]()))

    /// Starts `count` sites answering `answer(path)` (404 by default) after `delay`.
    public init(
        count: Int,
        delay: Duration,
        answer: @escaping @Sendable (_ path: String) -> Answer = { _ in .notFound }
    ) throws {
        var descriptors: [Int32] = []
        var origins: [String] = []
        for _ in 0..<count {
            let (descriptor, port) = try LoopbackPort.bound()
            guard listen(descriptor, 64) == 0 else {
                close(descriptor)
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            descriptors.append(descriptor)
            origins.append("http://127.0.0.1:\(port)")
        }
        self.descriptors = descriptors
        self.origins = origins
        self.delay = delay
        self.answer = answer
        for descriptor in descriptors {
            let thread = Thread { [self] in acceptLoop(descriptor) }
            thread.name = "keyhaven.testing.stand-in-site"
            thread.start()
        }
    }

    deinit { stop() }

    /// The request lines answered or being answered (`GET /path`), in order of arrival.
    public var requests: [String] { state.withLock { $0.requests } }

    /// Stops listening; requests still waiting are answered at once.
    public func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        for descriptor in descriptors { shutdown(descriptor, Int32(SHUT_RDWR)) }
        for descriptor in descriptors { close(descriptor) }
    }

    private var stopped: Bool { state.withLock { $0.stopped } }

    private func acceptLoop(_ descriptor: Int32) {
        while !stopped {
            let connection = accept(descriptor, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                return
            }
            let thread = Thread { [self] in serve(connection) }
            thread.name = "keyhaven.testing.stand-in-request"
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var head = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !head.ends(with: [13, 10, 13, 10]) && head.count < 65_536 {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { return }
            head += buffer[0..<count]
            if let end = head.firstRange(of: [13, 10, 13, 10]) { head = Array(head[..<end.upperBound]) }
        }
        let requestLine = String(decoding: head.prefix { $0 != 13 }, as: UTF8.self)
        state.withLock { $0.requests.append(requestLine) }
        let deadline = ContinuousClock.now + delay
        while ContinuousClock.now < deadline && !stopped { usleep(10_000) }
        let path = requestLine.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
        let reply = self.answer(path)
        var response = "HTTP/1.1 \(reply.status) Stand-in\r\nContent-Length: \(reply.body.utf8.count)\r\n"
        if let location = reply.location { response += "Location: \(location)\r\n" }
        response += "Content-Type: text/html\r\nConnection: close\r\n\r\n\(reply.body)"
        let bytes = Array(response.utf8)
        var sent = 0
        while sent < bytes.count {
            // The client may be gone (it gave up waiting): no SIGPIPE for that.
            let count = bytes[sent...].withUnsafeBufferPointer { buffer in
                #if os(Linux)
                send(connection, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
                #else
                write(connection, buffer.baseAddress, buffer.count)
                #endif
            }
            guard count > 0 else { return }
            sent += count
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
