import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A read-only memory mapping of a whole file. Immutable after creation, so any number of threads
/// may read it at once.
final class MappedFile: @unchecked Sendable {
    // Never written after init; unmapped (or freed) in deinit.
    let bytes: UnsafeRawBufferPointer
    /// Whether `bytes` is a mapping (else memory of our own).
    private let isMapped: Bool

    /// A copy of `contents` in memory, read exactly as a mapped file would be (tests and fuzzing:
    /// the address sanitizer sees every byte read past the end of an allocation).
    init(copying contents: [UInt8]) {
        isMapped = false
        guard !contents.isEmpty else {
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            return
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: contents.count, alignment: 8)
        contents.withUnsafeBytes { buffer.copyMemory(from: $0) }
        bytes = UnsafeRawBufferPointer(buffer)
    }

    init(path: String) throws {
        isMapped = true
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else {
            throw BreachError(.io, "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw BreachError(.io, "cannot read \(path)")
        }
        let size = Int(status.st_size)
        guard size > 0 else {
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            return
        }
        guard let address = mmap(nil, size, PROT_READ, MAP_SHARED, descriptor, 0), address != MAP_FAILED else {
            throw BreachError(.io, "cannot map \(path) into memory")
        }
        bytes = UnsafeRawBufferPointer(start: address, count: size)
    }

    deinit {
        guard let base = bytes.baseAddress else { return }
        if isMapped {
            munmap(UnsafeMutableRawPointer(mutating: base), bytes.count)
        } else {
            UnsafeMutableRawPointer(mutating: base).deallocate()
        }
    }

    @inline(__always)
    func load<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
