import Foundation

/// Streams the lines of a Pwned Passwords download (`SHA1:COUNT`, sorted or not, LF or CRLF),
/// reporting malformed lines by number and skipping them.
struct HIBPLineReader {
    /// One malformed line.
    struct BadLine: Sendable {
        var line: Int
        var reason: String
    }

    let handle: FileHandle
    var buffer: [UInt8] = []
    var position = 0
    var line = 0
    var bytesRead = 0
    var finished = false

    init(handle: FileHandle) {
        self.handle = handle
    }

    static let chunkSize = 4 << 20
    /// The longest line read (a Pwned Passwords line is under 60 bytes). A longer one is malformed
    /// and skipped to the next newline, so a file without newlines (CR only, or not text) costs a
    /// chunk and this much, never the whole file in memory.
    static let maximumLineLength = 1024
    static let tooLong =
        "longer than \(maximumLineLength) bytes (no newline: CR-only line endings, or not a text file?)"

    /// Calls `entry` for each good line, `bad` for each malformed one; returns at end of input.
    mutating func read(entry: (SHA1Digest, UInt32) -> Void, bad: (BadLine) -> Void, progress: (Int) -> Void) throws {
        var pending: [UInt8] = []
        // Inside a line already reported too long: its bytes up to the next newline are dropped.
        var skipping = false
        while true {
            guard let chunk = try handle.read(upToCount: Self.chunkSize), !chunk.isEmpty else { break }
            bytesRead += chunk.count
            progress(bytesRead)
            var data = pending
            data.append(contentsOf: chunk)
            var start = 0
            data.withUnsafeBufferPointer { bytes in
                var index = 0
                while index < bytes.count {
                    if bytes[index] == UInt8(ascii: "\n") {
                        if skipping {
                            skipping = false
                        } else {
                            line += 1
                            if index - start > Self.maximumLineLength {
                                bad(BadLine(line: line, reason: Self.tooLong))
                            } else {
                                Self.parse(bytes[start..<index], line: line, entry: entry, bad: bad)
                            }
                        }
                        start = index + 1
                    }
                    index += 1
                }
            }
            if skipping {
                pending = []
            } else if data.count - start > Self.maximumLineLength {
                line += 1
                bad(BadLine(line: line, reason: Self.tooLong))
                skipping = true
                pending = []
            } else {
                pending = Array(data[start...])
            }
        }
        if !pending.isEmpty {
            line += 1
            pending.withUnsafeBufferPointer { bytes in
                Self.parse(bytes[...], line: line, entry: entry, bad: bad)
            }
        }
    }

    static func parse(
        _ raw: Slice<UnsafeBufferPointer<UInt8>>,
        line: Int,
        entry: (SHA1Digest, UInt32) -> Void,
        bad: (BadLine) -> Void
    ) {
        var text = raw
        if text.last == UInt8(ascii: "\r") { text = text.dropLast() }
        // Blank lines (a final newline, blank separators) are not errors.
        if text.isEmpty || text.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { return }
        guard text.count > 41, text[text.startIndex + 40] == UInt8(ascii: ":") else {
            bad(BadLine(line: line, reason: "expected 40 hex digits, a colon and a count"))
            return
        }
        guard let bytes = SHA1Digest.parseHex(ArraySlice(text[text.startIndex..<text.startIndex + 40])) else {
            bad(BadLine(line: line, reason: "the hash is not 40 hexadecimal digits"))
            return
        }
        var count: UInt64 = 0
        for digit in text[(text.startIndex + 41)...] {
            guard digit >= UInt8(ascii: "0") && digit <= UInt8(ascii: "9") else {
                bad(BadLine(line: line, reason: "the count is not a whole number"))
                return
            }
            count = min(count * 10 + UInt64(digit - UInt8(ascii: "0")), UInt64(UInt32.max))
        }
        guard count > 0 else {
            bad(BadLine(line: line, reason: "a count of 0 is not a breach"))
            return
        }
        entry(SHA1Digest(bytes: bytes)!, UInt32(count))
    }
}
