import Crypto
public import Foundation
import _CryptoExtras

/// scrypt parameters, stored in the vault file next to the wrapped key.
public struct KDFParameters: Hashable, Sendable, Codable {
    public var algorithm: String
    /// log2 of scrypt's N (cost).
    public var logN: Int
    public var r: Int
    public var p: Int
    public var salt: Data

    /// Keyhaven's floor: N = 2^17, r = 8, p = 1 (128 MiB per derivation) — the minimum the OWASP
    /// Password Storage Cheat Sheet gives for scrypt, and above RFC 7914's interactive example
    /// (N = 2^14). Vaults are created, re-keyed and opened only at or above it unless weak
    /// parameters are explicitly allowed (`allowInsecureKDF`, the CLI's `--insecure-kdf`).
    public static let minimumLogN = 17
    /// The floor's block size.
    public static let minimumR = 8
    /// The floor's parallelism.
    public static let minimumP = 1

    /// Whether these parameters are at or above Keyhaven's floor (memory cost N·r and the
    /// salt length both count; parallelism never lowers the cost).
    public var meetsFloor: Bool {
        algorithm == "scrypt" && logN >= Self.minimumLogN && r >= Self.minimumR && p >= Self.minimumP
            && salt.count >= 16
    }

    /// Throws ``VaultError/Code/insecureKDF`` when the parameters are below the floor and that was
    /// not explicitly allowed.
    func checkFloor(allowInsecure: Bool, _ what: String) throws(VaultError) {
        guard !meetsFloor, !allowInsecure else { return }
        throw VaultError(
            .insecureKDF,
            "\(what) uses scrypt N=2^\(logN), r=\(r), p=\(p), below Keyhaven's floor of N=2^\(Self.minimumLogN), "
                + "r=\(Self.minimumR), p=\(Self.minimumP); allow it explicitly (--insecure-kdf) and then change "
                + "the master password to re-key with calibrated parameters"
        )
    }

    public init(logN: Int, r: Int = 8, p: Int = 1, salt: Data) {
        algorithm = "scrypt"
        self.logN = logN
        self.r = r
        self.p = p
        self.salt = salt
    }

    /// Fresh parameters with a random 32-byte salt.
    public static func random(logN: Int, r: Int = 8, p: Int = 1) -> KDFParameters {
        var generator = SystemRandomNumberGenerator()
        let salt = Data((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        return KDFParameters(logN: logN, r: r, p: p, salt: salt)
    }

    /// Parameters calibrated on this machine: N starts at 2^17 and doubles while one derivation stays
    /// under `target` seconds (at most 2^20, 1 GiB).
    public static func calibrated(target: Double = 0.5) -> KDFParameters {
        var logN = minimumLogN
        let probe = KDFParameters.random(logN: logN)
        let start = Date()
        _ = try? probe.deriveKey(password: "calibration")
        var elapsed = Date().timeIntervalSince(start)
        while logN < 20 && elapsed * 2 <= target {
            logN += 1
            elapsed *= 2
        }
        return .random(logN: logN)
    }

    /// The key-encryption key for `password`.
    func deriveKey(password: String) throws -> SymmetricKey {
        guard algorithm == "scrypt", (10...24).contains(logN), (1...32).contains(r), (1...16).contains(p),
            salt.count >= 16
        else {
            throw VaultError(.unsupportedVersion, "unsupported key-derivation parameters in the vault header")
        }
        return try KDF.Scrypt.deriveKey(
            from: Data(password.utf8),
            salt: salt,
            outputByteCount: 32,
            rounds: 1 << logN,
            blockSize: r,
            parallelism: p
        )
    }
}
