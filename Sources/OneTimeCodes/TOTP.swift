import Crypto
public import Foundation
import _KeyhavenSupport

/// Time-based one-time passwords (RFC 6238 over RFC 4226 HOTP): what authenticator apps show.
///
/// ```swift
/// let totp = try TOTP(secret: "JBSWY3DPEHPK3PXP")
/// totp.code(at: Date())              // "123456"
/// totp.verify("123456", at: Date())  // one step of drift either way is accepted
/// ```
public struct TOTP: Sendable, Hashable {
    public enum Algorithm: String, Sendable, Hashable {
        case sha1 = "SHA1"
        case sha256 = "SHA256"
        case sha512 = "SHA512"
    }

    public var key: [UInt8]
    public var digits: Int
    public var period: Int
    public var algorithm: Algorithm

    /// - Parameter secret: base32 (RFC 4648, any case, spaces and padding ignored) or an
    ///   `otpauth://totp/…?secret=…` URI (its digits, period and algorithm are used).
    public init(secret: String, digits: Int = 6, period: Int = 30, algorithm: Algorithm = .sha1) throws(TOTPError) {
        var secret = secret
        var digits = digits
        var period = period
        var algorithm = algorithm
        if secret.lowercased().hasPrefix("otpauth://") {
            guard let components = URLComponents(string: secret),
                let items = components.queryItems,
                let value = items.first(where: { $0.name.lowercased() == "secret" })?.value
            else {
                throw TOTPError(.missingSecret, "the otpauth URI has no secret")
            }
            func item(_ name: String) -> String? { items.first { $0.name.lowercased() == name }?.value }
            secret = value
            digits = item("digits").flatMap(Int.init) ?? digits
            period = item("period").flatMap(Int.init) ?? period
            algorithm = item("algorithm").flatMap { Algorithm(rawValue: $0.uppercased()) } ?? algorithm
        }
        guard let key = Base32.decode(secret), !key.isEmpty else {
            throw TOTPError(.invalidSecret, "the secret is not base32")
        }
        guard (6...10).contains(digits), period > 0 else {
            throw TOTPError(.unsupportedParameters, "unsupported TOTP parameters (6 to 10 digits, a positive period)")
        }
        self.key = key
        self.digits = digits
        self.period = period
        self.algorithm = algorithm
    }

    /// The code for `date`.
    public func code(at date: Date) -> String {
        code(counter: UInt64(max(0, date.timeIntervalSince1970)) / UInt64(period))
    }

    /// How many whole seconds the code for `date` stays valid (1 to ``period``).
    public func secondsRemaining(at date: Date) -> Int {
        let elapsed = UInt64(max(0, date.timeIntervalSince1970)) % UInt64(period)
        return period - Int(elapsed)
    }

    /// HOTP for a counter value.
    public func code(counter: UInt64) -> String {
        let message = withUnsafeBytes(of: counter.bigEndian) { Array($0) }
        let symmetric = SymmetricKey(data: key)
        let mac: [UInt8]
        switch algorithm {
        case .sha1: mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: symmetric))
        case .sha256: mac = Array(HMAC<SHA256>.authenticationCode(for: message, using: symmetric))
        case .sha512: mac = Array(HMAC<SHA512>.authenticationCode(for: message, using: symmetric))
        }
        let offset = Int(mac[mac.count - 1] & 0x0F)
        let binary =
            (UInt32(mac[offset] & 0x7F) << 24) | (UInt32(mac[offset + 1]) << 16) | (UInt32(mac[offset + 2]) << 8)
            | UInt32(mac[offset + 3])
        var modulus: UInt64 = 1  // 10^10 does not fit in 32 bits
        for _ in 0..<digits { modulus *= 10 }
        let value = String(UInt64(binary) % modulus)
        return String(repeating: "0", count: digits - value.count) + value
    }

    /// Whether `code` is valid at `date`, allowing `window` steps of clock drift either way.
    /// Compared in constant time. A verifier that must refuse a code used before (RFC 6238 §5.2)
    /// uses ``matchingStep(_:at:window:)`` and remembers the step.
    public func verify(_ code: String, at date: Date, window: Int = 1) -> Bool {
        matchingStep(code, at: date, window: window) != nil
    }

    /// The time step (counter) whose code `code` is, within `window` steps of `date`; nil when
    /// none. Every step of the window is computed and compared, whichever matches.
    public func matchingStep(_ code: String, at date: Date, window: Int = 1) -> Int64? {
        let candidate = Array(code.utf8)
        let counter = Int64(max(0, date.timeIntervalSince1970)) / Int64(period)
        var matched: Int64?
        for step in -window...window where counter + Int64(step) >= 0 {
            let expected = Array(self.code(counter: UInt64(counter + Int64(step))).utf8)
            if constantTimeEqual(candidate, expected) { matched = counter + Int64(step) }
        }
        return matched
    }

    /// A fresh random secret (20 bytes, base32).
    public static func randomSecret<R: RandomNumberGenerator>(using generator: inout R) -> String {
        Base32.encode((0..<20).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }
}

/// RFC 4648 base32.
public enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var buffer: UInt64 = 0
        var bits = 0
        for byte in bytes {
            buffer = buffer << 8 | UInt64(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[Int((buffer >> UInt64(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[Int((buffer << UInt64(5 - bits)) & 31)]) }
        return String(decoding: output, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var output: [UInt8] = []
        var buffer: UInt64 = 0
        var bits = 0
        for character in text.uppercased().utf8 where character != UInt8(ascii: " ") && character != UInt8(ascii: "=") {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            buffer = buffer << 5 | UInt64(value)
            bits += 5
            if bits >= 8 {
                output.append(UInt8((buffer >> UInt64(bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return output
    }
}
