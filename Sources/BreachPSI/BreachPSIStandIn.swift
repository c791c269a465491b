public import BreachCheck
import Crypto
public import Foundation
public import _KeyhavenSupport

/// The device's secret behind the stand-ins of locally found passwords (docs/breach-psi.md, "The
/// local list"). A password found in the local list is not sent: a stand-in digest takes its place
/// in its batch. A stand-in drawn fresh each run would let a server that compares runs tell the
/// stand-ins (new buckets every run) from the passwords it is really asked about (the same buckets
/// every run), and so count the passwords found locally. The stand-in is therefore
/// HMAC-SHA256(key, `"keyhaven breach-psi v1 stand-in"` ‖ 0x00 ‖ digest), truncated to the 20 bytes of
/// a digest: the same every run on this device, unrelated to the password for anyone without the key,
/// and different on another device.
///
/// The key is 32 random bytes in a file of its own beside the list (`LIST.stand-in-key`, created
/// 0600 through ``PrivateFile``, never replaced). Its description never shows the bytes.
public struct BreachPSIStandInKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    static let length = 32
    static let label = Array("keyhaven breach-psi v1 stand-in".utf8) + [0]
    let key: SymmetricKey

    /// `bytes` must be 32 bytes.
    public init(bytes: some Collection<UInt8>) throws(BreachPSIError) {
        guard bytes.count == Self.length else {
            throw BreachPSIError(.invalidKey, "a stand-in key is \(Self.length) bytes (got \(bytes.count))")
        }
        key = SymmetricKey(data: Array(bytes))
    }

    /// A new key from `generator` (the system's random source in the tools; seeded in tests).
    public init(using generator: inout some RandomNumberGenerator) {
        key = SymmetricKey(data: (0..<Self.length).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// The stand-in for `digest`: stable for this key, unrelated to `digest` without it.
    public func standIn(for digest: SHA1Digest) -> SHA1Digest {
        let mac = HMAC<SHA256>.authenticationCode(for: Self.label + digest.bytes, using: key)
        return SHA1Digest(bytes: Array(Array(mac).prefix(20)))!
    }

    /// Where the key of the list at `list` lives: `LIST.stand-in-key`.
    public static func url(besideList list: URL) -> URL {
        list.deletingLastPathComponent().appendingPathComponent(list.lastPathComponent + ".stand-in-key")
    }

    /// The key beside the list at `list`: read when the file exists, else made from the system's
    /// random source and written there (0600, refusing anything already at the path; a key another
    /// process wrote meanwhile is read instead). A file that is not a key is an error naming it.
    public static func loadOrCreate(besideList list: URL) throws(BreachPSIError) -> Self {
        let url = url(besideList: list)
        if let key = try read(url) { return key }
        var generator = SystemRandomNumberGenerator()
        let key = Self(using: &generator)
        do throws(PrivateFileError) {
            try PrivateFile.create(at: url, contents: key.key.withUnsafeBytes { Array($0) })
            return key
        } catch  where error.code == .exists {
            if let written = try read(url) { return written }
            throw BreachPSIError(.io, "\(url.path) appeared while it was being created and cannot be read")
        } catch {
            throw BreachPSIError(
                .io,
                "cannot create the local list's stand-in key \(url.path): \(error.message); make its folder writable, or move the list to a folder that is"
            )
        }
    }

    /// The key in the file at `url`, nil when there is none.
    static func read(_ url: URL) throws(BreachPSIError) -> Self? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw BreachPSIError(.io, "cannot read the local list's stand-in key \(url.path)")
        }
        do throws(BreachPSIError) {
            return try Self(bytes: data)
        } catch {
            throw BreachPSIError(
                .invalidKey,
                "\(url.path) is not a stand-in key (\(data.count) bytes, not \(length)); remove it and a new one is made"
            )
        }
    }

    public var description: String { "BreachPSIStandInKey(…)" }
    public var debugDescription: String { description }
}
