import Crypto
import Foundation
import _CryptoExtras
import _KeyhavenSupport

/// Password hashes for sign-in (never for the vault): scrypt with r = 8, p = 1, stored as one
/// self-describing string `$scrypt$ln=15,r=8,p=1$<salt>$<hash>` (salt and hash in base64), so the
/// cost can rise without a migration.
public enum PasswordHash {
    /// Hashes `password` with N = 2^`logN` and a fresh 16-byte salt.
    public static func make(_ password: String, logN: Int) throws -> String {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let digest = try derive(password, salt: salt, logN: logN)
        return "$scrypt$ln=\(logN),r=8,p=1$\(Data(salt).base64EncodedString())$\(Data(digest).base64EncodedString())"
    }

    /// Whether `password` matches `encoded`; false (never a throw) for anything malformed.
    public static func verify(_ password: String, against encoded: String) -> Bool {
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[1] == "scrypt", parts[2].hasPrefix("ln="),
            let logN = Int(parts[2].dropFirst(3).prefix { $0 != "," }), (1...22).contains(logN),
            parts[2].hasSuffix(",r=8,p=1"),
            let salt = Data(base64Encoded: String(parts[3])), let expected = Data(base64Encoded: String(parts[4])),
            let digest = try? derive(password, salt: [UInt8](salt), logN: logN)
        else { return false }
        return constantTimeEqual(digest, [UInt8](expected))
    }

    static func derive(_ password: String, salt: [UInt8], logN: Int) throws -> [UInt8] {
        let key = try KDF.Scrypt.deriveKey(
            from: Array(password.utf8),
            salt: salt,
            outputByteCount: 32,
            rounds: 1 << logN,
            blockSize: 8,
            parallelism: 1
        )
        return key.withUnsafeBytes { Array($0) }
    }
}
