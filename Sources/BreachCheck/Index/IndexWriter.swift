import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Streams sorted entries into an index file (format: ``BreachIndexFormat``).
struct IndexWriter {
    let kind: BreachIndexBuilder.Kind
    let handle: FileHandle
    var buffer: [UInt8] = []
    var written = 0
    var count = 0

    // compact
    let bucketBits: Int
    let suffixBits: Int
    let recordBits: Int
    var sizes: [UInt8]
    var overflow: [Int: UInt64] = [:]
    var bitBuffer: UInt64 = 0
    var bitCount = 0

    // full
    var fullSizes: [UInt64]

    init(kind: BreachIndexBuilder.Kind, url: URL, expectedCount: Int) throws {
        self.kind = kind
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw BreachError(.io, "cannot create \(url.path)")
        }
        handle = try FileHandle(forWritingTo: url)
        switch kind {
        case .compact:
            bucketBits = BreachIndexFormat.compactBucketBits(for: expectedCount)
            suffixBits = 64 - bucketBits
            recordBits = suffixBits + BreachIndexFormat.countCodeBits
            sizes = [UInt8](repeating: 0, count: 1 << bucketBits)
            fullSizes = []
        case .full:
            bucketBits = BreachIndexFormat.fullBucketBits
            suffixBits = 160 - bucketBits
            recordBits = BreachIndexFormat.fullRecordSize * 8
            sizes = []
            fullSizes = [UInt64](repeating: 0, count: 1 << bucketBits)
        }
        buffer.reserveCapacity(1 << 22)
        buffer.append(contentsOf: [UInt8](repeating: 0, count: BreachIndexFormat.headerSize))
    }

    mutating func flushBuffer(force: Bool = false) throws {
        if force || buffer.count >= 1 << 22 {
            try handle.write(contentsOf: buffer)
            written += buffer.count
            buffer.removeAll(keepingCapacity: true)
        }
    }

    mutating func append(_ entry: Entry, _ total: UInt32) throws {
        count += 1
        switch kind {
        case .compact:
            let bucket = Int(entry.a >> UInt64(suffixBits))
            if sizes[bucket] == UInt8(BreachIndexFormat.escape) {
                overflow[bucket, default: UInt64(BreachIndexFormat.escape)] += 1
            } else if sizes[bucket] == UInt8(BreachIndexFormat.escape - 1) {
                sizes[bucket] = UInt8(BreachIndexFormat.escape)
                overflow[bucket] = UInt64(BreachIndexFormat.escape)
            } else {
                sizes[bucket] += 1
            }
            let suffix = suffixBits == 64 ? entry.a : entry.a & ((1 << UInt64(suffixBits)) - 1)
            let record = suffix << 4 | BreachIndexFormat.countCode(total)
            writeBits(record, width: recordBits)
        case .full:
            fullSizes[Int(entry.a >> 48)] += 1
            for shift in stride(from: 40, through: 0, by: -8) {
                buffer.append(UInt8(truncatingIfNeeded: entry.a >> UInt64(shift)))
            }
            for shift in stride(from: 56, through: 0, by: -8) {
                buffer.append(UInt8(truncatingIfNeeded: entry.b >> UInt64(shift)))
            }
            for shift in stride(from: 24, through: 0, by: -8) {
                buffer.append(UInt8(truncatingIfNeeded: entry.c >> UInt32(shift)))
            }
            withUnsafeBytes(of: total.littleEndian) { buffer.append(contentsOf: $0) }
        }
        try flushBuffer()
    }

    /// Appends the low `width` bits of `value`, most significant first.
    mutating func writeBits(_ value: UInt64, width: Int) {
        var remaining = width
        while remaining > 0 {
            let take = min(remaining, 8 - bitCount)
            let shift = remaining - take
            let bits = (value >> UInt64(shift)) & ((1 << UInt64(take)) - 1)
            bitBuffer = bitBuffer << UInt64(take) | bits
            bitCount += take
            remaining -= take
            if bitCount == 8 {
                buffer.append(UInt8(bitBuffer))
                bitBuffer = 0
                bitCount = 0
            }
        }
    }

    mutating func finish() throws -> Int {
        if kind == .compact && bitCount > 0 {
            buffer.append(UInt8(bitBuffer << UInt64(8 - bitCount)))
            bitCount = 0
        }
        // Padding so that 9-byte unaligned reads of the last record stay inside the file.
        buffer.append(contentsOf: [UInt8](repeating: 0, count: 16))
        try flushBuffer(force: true)
        let recordsOffset = BreachIndexFormat.headerSize
        let recordsLength = written - recordsOffset

        var sections: [(offset: Int, length: Int)] = []
        func section(_ bytes: [UInt8]) throws {
            sections.append((written, bytes.count))
            try handle.write(contentsOf: bytes)
            written += bytes.count
        }
        switch kind {
        case .compact:
            var nibbles = [UInt8](repeating: 0, count: (sizes.count + 1) / 2)
            for (bucket, size) in sizes.enumerated() {
                nibbles[bucket >> 1] |= bucket & 1 == 0 ? size << 4 : size
            }
            try section(nibbles)
            var blocks: [UInt8] = []
            var running: UInt64 = 0
            for bucket in 0..<sizes.count {
                if bucket % BreachIndexFormat.blockSize == 0 {
                    withUnsafeBytes(of: running.littleEndian) { blocks.append(contentsOf: $0) }
                }
                running += sizes[bucket] == UInt8(BreachIndexFormat.escape) ? overflow[bucket]! : UInt64(sizes[bucket])
            }
            withUnsafeBytes(of: running.littleEndian) { blocks.append(contentsOf: $0) }
            try section(blocks)
            var table: [UInt8] = []
            for (bucket, size) in overflow.sorted(by: { $0.key < $1.key }) {
                withUnsafeBytes(of: UInt64(bucket).littleEndian) { table.append(contentsOf: $0) }
                withUnsafeBytes(of: size.littleEndian) { table.append(contentsOf: $0) }
            }
            try section(table)
        case .full:
            var offsets: [UInt8] = []
            var running: UInt64 = 0
            for size in fullSizes {
                withUnsafeBytes(of: running.littleEndian) { offsets.append(contentsOf: $0) }
                running += size
            }
            withUnsafeBytes(of: running.littleEndian) { offsets.append(contentsOf: $0) }
            try section(offsets)
            try section([])
            try section([])
        }

        var header = [UInt8](repeating: 0, count: BreachIndexFormat.headerSize)
        func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
            withUnsafeBytes(of: value.littleEndian) { raw in
                for (index, byte) in raw.enumerated() { header[offset + index] = byte }
            }
        }
        for (index, byte) in BreachIndexFormat.magic.enumerated() { header[index] = byte }
        put(BreachIndexFormat.version, at: 8)
        put((kind == .compact ? BreachIndexFormat.Kind.compact : .full).rawValue, at: 12)
        put(UInt64(count), at: 16)
        put(UInt32(bucketBits), at: 24)
        put(UInt32(recordBits), at: 28)
        put(UInt32(suffixBits), at: 32)
        put(UInt64(sections[0].offset), at: 40)
        put(UInt64(sections[0].length), at: 48)
        put(UInt64(sections[1].offset), at: 56)
        put(UInt64(sections[1].length), at: 64)
        put(UInt64(sections[2].offset), at: 72)
        put(UInt64(sections[2].length), at: 80)
        put(UInt64(recordsOffset), at: 88)
        put(UInt64(recordsLength), at: 96)
        put(UInt64(written), at: 104)
        put(BreachIndexFormat.fnv1a(header[0..<112]), at: 112)
        try handle.seek(toOffset: 0)
        try handle.write(contentsOf: header)
        try handle.synchronize()
        try handle.close()
        return count
    }
}

extension IndexWriter {
    /// Calls `body` with a temporary path beside `output`, then renames what it wrote over `output`
    /// with rename(2): atomic (a reader or a crash sees the old file or the new one, never neither),
    /// and followed by an fsync of the directory so that the rename itself is durable. An existing
    /// `output` that is not a regular file (a directory, a symbolic link, a device) is refused before
    /// anything is written, and nothing is ever deleted but the temporary file: an interrupted or
    /// failed write leaves `output` as it was.
    static func replacing<T>(_ output: URL, _ body: (URL) throws -> T) throws(BreachError) -> T {
        try refuseUnlessRegularFile(output)
        let temporary = output.deletingLastPathComponent().appendingPathComponent(
            ".\(output.lastPathComponent).building-\(UUID().uuidString)"
        )
        let result: T
        do {
            result = try body(temporary)
        } catch let error as BreachError {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw BreachError(.io, "writing \(output.path) failed: \(error.localizedDescription)")
        }
        do throws(BreachError) {
            // Checked again: something may have appeared there while the body ran (rename(2) would
            // refuse a directory too, but not a symbolic link).
            try refuseUnlessRegularFile(output)
            guard rename(temporary.path, output.path) == 0 else {
                let reason = String(cString: strerror(errno))
                throw BreachError(
                    .io,
                    "cannot rename the new file over \(output.path): \(reason); it was left as it was"
                )
            }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        syncDirectory(of: output)
        return result
    }

    /// Throws unless `output` is absent or a regular file (not followed if it is a symbolic link).
    static func refuseUnlessRegularFile(_ output: URL) throws(BreachError) {
        var status = stat()
        guard lstat(output.path, &status) == 0 else { return }
        guard status.st_mode & S_IFMT == S_IFREG else {
            let what = status.st_mode & S_IFMT == S_IFDIR ? "a directory" : "not a regular file"
            throw BreachError(
                .invalidInput,
                "\(output.path) is \(what): nothing was written and nothing deleted; give the path of a file to write (an existing file there is replaced)"
            )
        }
    }

    /// fsync(2) of the directory holding `output`, so that a rename into it survives a crash. Best
    /// effort: the new file is in place either way.
    static func syncDirectory(of output: URL) {
        let descriptor = open(output.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        _ = close(descriptor)
    }
}
