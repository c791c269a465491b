public import AsyncHTTPClient
public import NIOCore

extension HTTPClientResponse.Body {
    /// The whole body, at most `limit` bytes, read before `deadline`: AsyncHTTPClient's request
    /// deadline (`execute(_:deadline:)`) ends when the answer's head arrives, so a server that
    /// sends its headers and then stalls the body would hold a plain `collect(upTo:)` for ever.
    /// Give it the request's own deadline, so that the whole exchange ends by then.
    ///
    /// - Throws: `HTTPClientError.deadlineExceeded` when time runs out (``OutboundFailure/timedOut``:
    ///   the request may have been applied; reading stops and the connection is dropped),
    ///   `NIOTooManyBytesError` over `limit`, `CancellationError` when the task is cancelled, or the
    ///   error that broke the connection.
    public func collect(upTo limit: Int, deadline: NIODeadline) async throws -> ByteBuffer {
        try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await self.collect(upTo: limit) }
            group.addTask {
                let left = deadline - .now()
                if left.nanoseconds > 0 { try await Task.sleep(nanoseconds: UInt64(left.nanoseconds)) }
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let body = first else {
                throw HTTPClientError.deadlineExceeded
            }
            // Cancelled meanwhile: a body cut short by the cancellation is not the answer.
            try Task.checkCancellation()
            return body
        }
    }
}

extension OutboundHTTP {
    /// The seconds a `Retry-After` asks for, read strictly: only its delay-seconds form (RFC 9110
    /// §10.2.3, ASCII digits), nil for anything else (an HTTP date, a sign, a fraction, spaces,
    /// text). More than 9 digits is ``retryAfterCeiling`` (a server asking for longer than that is
    /// asking for the longest a caller waits, not for nothing). Each caller clamps it to what it is
    /// willing to wait; nothing of the server's text is ever shown.
    public static func retryAfter(_ value: String?) -> Int? {
        guard let value, !value.isEmpty, value.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return value.utf8.count > 9 ? retryAfterCeiling : Int(value)
    }

    /// What ``retryAfter(_:)`` reads for more than 9 digits: 999 999 999 seconds, more than any
    /// caller's maximum.
    public static let retryAfterCeiling = 999_999_999
}
