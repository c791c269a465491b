import Foundation
import Testing
import _KeyhavenSupport

@testable import AutoFill

@Suite struct FramesTests {
    @Test func framesSplitAndJoinedAnywhereComeOutWhole() throws {
        let payloads = [Data(#"{"a":1}"#.utf8), Data(repeating: 0x41, count: 70_000), Data("{}".utf8)]
        let stream = payloads.map(Frames.encode).reduce(Data(), +)
        for chunk in [1, 3, 4, 5, 4096, stream.count] {
            var reader = FrameReader()
            var out: [Data] = []
            var offset = 0
            while offset < stream.count {
                reader.append(stream[offset..<min(offset + chunk, stream.count)])
                offset += chunk
                while let frame = try reader.next() { out.append(frame) }
            }
            try reader.finish()
            #expect(out == payloads, "chunk \(chunk)")
        }
    }

    @Test func aFrameOverOneMebibyteIsRefusedBeforeItsBytesArrive() {
        var reader = FrameReader()
        reader.append(Data([0x01, 0x00, 0x10, 0x00]))  // 1 MiB + 1
        #expect(throws: FrameError(code: .tooLong)) { try reader.next() }
        var exact = FrameReader()
        exact.append(Data([0x00, 0x00, 0x10, 0x00]))  // exactly 1 MiB: waits for the bytes
        #expect((try? exact.next()) == .some(nil))
    }

    @Test func anEmptyFrameAndACutStreamAreErrors() {
        var empty = FrameReader()
        empty.append(Data([0, 0, 0, 0]))
        #expect(throws: FrameError(code: .empty)) { try empty.next() }
        var cut = FrameReader()
        cut.append(Data([5, 0, 0, 0, 0x7B]))
        #expect((try? cut.next()) == .some(nil))
        #expect(throws: FrameError(code: .truncated)) { try cut.finish() }
    }
}
