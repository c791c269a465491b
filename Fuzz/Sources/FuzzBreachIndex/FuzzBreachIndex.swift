import Foundation

@testable import BreachCheck

/// One fuzz input: a breach index file, as `keyhaven breach check --index`, the audit and the range
/// server open it. The last byte is a control byte: unless its low bit is set, the harness first
/// makes the header pass the cheap checks an attacker passes too (magic, version, the file size, the
/// FNV checksum), so the fuzzer spends its time on the offsets and tables behind them.
///
/// Beyond "no crash" (and no read outside the file: the address sanitizer sees the bytes, which are
/// an allocation of exactly the file's size): opening fails with a `BreachError` or yields an index
/// whose lookups answer 0, a power of two up to 32768 (compact) or a count (full), or fail with
/// `corrupt`; ranges list rows of the asked prefix's last digit, in order.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    guard let control = input.last else { return 0 }
    var file = Array(input.dropLast())
    if control & 1 == 0, file.count >= BreachIndexFormat.headerSize {
        reseal(&file)
    }
    let index: BreachIndex
    do {
        index = try BreachIndex(file: MappedFile(copying: file), name: "fuzz")
    } catch {
        return 0
    }
    // Keys in every block and around the crowded seed bucket, plus some from the input.
    var keys: [UInt64] = (0..<64).map { UInt64($0) << 58 | 0x0123_4567_89AB } + [0xABCD_EF01_2300_0000, 0, .max]
    for chunk in stride(from: 0, to: min(file.count, 512) - 7, by: 61) {
        keys.append(file[chunk..<chunk + 8].reduce(0) { $0 << 8 | UInt64($1) })
    }
    for key in keys {
        var bytes = (0..<8).map { UInt8(truncatingIfNeeded: key >> UInt64(56 - 8 * $0)) }
        bytes += [UInt8](repeating: UInt8(truncatingIfNeeded: key), count: 12)
        do {
            let found = try index.count(of: SHA1Digest(bytes: bytes)!)
            if index.kind == .compact {
                guard found == 0 || (found.nonzeroBitCount == 1 && found <= 32768) else {
                    fatalError("a compact count of \(found)")
                }
            } else if !(0...Int(UInt32.max)).contains(found) {
                fatalError("a full count of \(found)")
            }
        } catch {
            guard error.code == .corrupt else { fatalError("a lookup failed with \(error.code)") }
        }
    }
    if index.kind == .full {
        for prefix in stride(from: UInt32(0), through: 0xF_FFFF, by: 0x0_3FFF) {
            guard let rows = try? index.range(prefix: prefix) else { fatalError("a range failed") }
            for row in rows where row.suffix.count != 18 || row.suffix[0] >> 4 != UInt8(prefix & 0xF) {
                fatalError("a row of another prefix")
            }
            for (a, b) in zip(rows, rows.dropFirst()) where !a.suffix.lexicographicallyPrecedes(b.suffix) {
                fatalError("rows out of order")
            }
        }
    }
    return 0
}

/// Magic, version, the file size and the header checksum made right.
func reseal(_ file: inout [UInt8]) {
    func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for (index, byte) in raw.enumerated() { file[offset + index] = byte }
        }
    }
    for (index, byte) in BreachIndexFormat.magic.enumerated() { file[index] = byte }
    put(BreachIndexFormat.version, at: 8)
    put(UInt64(file.count), at: 104)
    put(BreachIndexFormat.fnv1a(file[0..<112]), at: 112)
}

/// Small real compact indexes (sizes that give different bucket bits, one with a crowded bucket and
/// so an overflow table), each with a control byte of 0; a full index is 512 KiB of bucket table,
/// too big to mutate usefully, so the tests craft those.
func seeds() -> [[UInt8]] {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-seeds-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    var generator = SystemRandomNumberGenerator()
    func hex(_ count: Int) -> String {
        String((0..<count).map { _ in "0123456789ABCDEF".randomElement(using: &generator)! })
    }
    var result: [[UInt8]] = []
    for (size, crowded) in [(1, 0), (5, 0), (40, 0), (60, 20), (300, 0), (1100, 30)] {
        var lines = (0..<size).map { "\(hex(40)):\($0 * 977 + 1)" }
        lines += (0..<crowded).map { "ABCDEF0123\(hex(30)):\($0 + 70000)" }
        let source = directory.appendingPathComponent("\(size).txt")
        let output = directory.appendingPathComponent("\(size).khbi")
        try! Data(lines.joined(separator: "\n").utf8).write(to: source)
        _ = try! BreachIndexBuilder(kind: .compact).build(input: source, output: output)
        result.append(Array(try! Data(contentsOf: output)) + [0])
    }
    return result
}
