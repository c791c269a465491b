package import Foundation

/// The protocol's frames: a 4-byte length, then that many bytes of UTF-8 JSON (one object).
/// Native messaging writes the length in the machine's byte order; the agent's socket in little
/// endian (the same on every machine Keyhaven runs on, and stated so another client can be
/// written). A frame longer than ``maximumLength`` or empty is refused.
package enum Frames {
    /// 1 MiB: Chrome's cap on a host's message to the browser, used both ways.
    package static let maximumLength = 1 << 20

    /// `payload` with its length before it.
    package static func encode(_ payload: Data) -> Data {
        var frame = Data(capacity: payload.count + 4)
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { frame.append(contentsOf: $0) }
        frame.append(payload)
        return frame
    }
}

/// What went wrong with a frame. Not API (`package`: only Keyhaven's own agent, browser host and
/// CLI read frames), so a plain enum of codes is enough here.
package struct FrameError: Error, Equatable, CustomStringConvertible {
    package enum Code: String, Sendable { case tooLong, empty, truncated }
    package var code: Code
    package init(code: Code) { self.code = code }
    package var description: String {
        switch code {
        case .tooLong: "a frame is longer than 1 MiB"
        case .empty: "a frame is empty"
        case .truncated: "the stream ended inside a frame"
        }
    }
}

/// Cuts frames out of a byte stream as it arrives (reads may split or join frames anywhere).
package struct FrameReader: Sendable {
    private var buffer = Data()

    package init() {}

    /// Adds bytes read from the stream.
    package mutating func append(_ bytes: Data) {
        buffer.append(bytes)
    }

    /// The next whole frame's payload, nil when more bytes are needed. Throws on a length over the
    /// cap or of zero: the stream is then unusable (close it).
    package mutating func next() throws(FrameError) -> Data? {
        guard buffer.count >= 4 else { return nil }
        let start = buffer.startIndex
        let length =
            Int(buffer[start]) | Int(buffer[start + 1]) << 8 | Int(buffer[start + 2]) << 16 | Int(buffer[start + 3])
            << 24
        guard length > 0 else { throw FrameError(code: .empty) }
        guard length <= Frames.maximumLength else { throw FrameError(code: .tooLong) }
        guard buffer.count >= 4 + length else { return nil }
        let payload = Data(buffer[(start + 4)..<(start + 4 + length)])
        buffer = Data(buffer[(start + 4 + length)...])
        return payload
    }

    /// Call at end of stream: throws when a frame was cut off.
    package func finish() throws(FrameError) {
        if !buffer.isEmpty { throw FrameError(code: .truncated) }
    }
}
