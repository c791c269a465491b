public import BreachCheck
import Crypto

/// The fixed parameters of the private breach check, wire version 1 (docs/breach-psi.md).
///
/// A leaked password is known to the server by its SHA-1 (as in the Pwned Passwords file and the
/// offline index). The OPRF input is those 20 bytes; the bucket is the top ``prefixBits`` bits of
/// SHA-256 over a domain tag and the same 20 bytes, so the prefix tells the server 15 bits about
/// the password and nothing else (it is not a prefix of the SHA-1 nor of the OPRF output).
public enum BreachPSI {
    /// The wire version of requests and responses.
    public static let version: UInt8 = 1
    /// Bits of the bucket prefix: 2^15 buckets.
    public static let prefixBits = 15
    /// The number of buckets.
    public static let bucketCount = 1 << prefixBits
    /// Bytes kept of each 48-byte OPRF output in a bucket (big-endian, the first bytes).
    public static let entryLength = 8
    /// The most entries a client accepts in one bucket: 2^18 (2 MiB), eight times what a corpus of
    /// a billion hashes puts in a bucket on average.
    public static let maximumBucketEntries = 1 << 18
    /// The domain tag of the bucket hash.
    static let bucketTag = Array("keyhaven breach-psi v1 bucket\0".utf8)

    /// The OPRF input for a digest: its 20 bytes.
    static func input(_ digest: SHA1Digest) -> [UInt8] { digest.bytes }

    /// The bucket of a digest: the top 15 bits of SHA-256("keyhaven breach-psi v1 bucket\0" ‖ SHA-1).
    public static func prefix(of digest: SHA1Digest) -> UInt16 {
        var hasher = SHA256()
        hasher.update(data: bucketTag)
        hasher.update(data: digest.bytes)
        let hash = Array(hasher.finalize())
        return (UInt16(hash[0]) << 8 | UInt16(hash[1])) >> (16 - prefixBits)
    }

    /// The bucket entry of a 48-byte OPRF output: its first ``entryLength`` bytes, big-endian.
    static func entry(_ output: some Collection<UInt8>) -> UInt64 {
        output.prefix(entryLength).reduce(0) { $0 << 8 | UInt64($1) }
    }
}
