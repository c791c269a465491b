import Foundation
import OneTimeCodes
import Testing

/// The sign-in factors against their specifications' published test vectors.
struct OneTimeCodesTests {
    /// RFC 6238, Appendix B: the ASCII seeds "1234567890…" of 20, 32 and 64 bytes, 8 digits, 30 s.
    static let seeds: [TOTP.Algorithm: String] = [
        .sha1: "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ",
        .sha256: "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZA====",
        .sha512: "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"
            + "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQGEZDGNA=",
    ]

    static let vectors: [(time: TimeInterval, sha1: String, sha256: String, sha512: String)] = [
        (59, "94287082", "46119246", "90693936"),
        (1_111_111_109, "07081804", "68084774", "25091201"),
        (1_111_111_111, "14050471", "67062674", "99943326"),
        (1_234_567_890, "89005924", "91819424", "93441116"),
        (2_000_000_000, "69279037", "90698825", "38618901"),
        (20_000_000_000, "65353130", "77737706", "47863826"),
    ]

    @Test func rfc6238Vectors() throws {
        for vector in Self.vectors {
            let date = Date(timeIntervalSince1970: vector.time)
            for (algorithm, expected) in [
                (TOTP.Algorithm.sha1, vector.sha1), (.sha256, vector.sha256), (.sha512, vector.sha512),
            ] {
                let totp = try TOTP(secret: Self.seeds[algorithm]!, digits: 8, algorithm: algorithm)
                #expect(totp.code(at: date) == expected, "\(algorithm) at \(vector.time)")
                #expect(totp.verify(expected, at: date))
            }
        }
    }

    @Test func sixDigitsAreTheLastSixAndTheWindowIsOneStep() throws {
        let totp = try TOTP(secret: Self.seeds[.sha1]!)
        let date = Date(timeIntervalSince1970: 59)
        #expect(totp.code(at: date) == "287082")
        // One period either side is accepted (clock drift), two are not.
        #expect(totp.verify("287082", at: date.addingTimeInterval(30)))
        #expect(totp.verify("287082", at: date.addingTimeInterval(-29)))
        #expect(!totp.verify("287082", at: date.addingTimeInterval(61)))
        #expect(!totp.verify("287083", at: date))
        #expect(!totp.verify("", at: date))
    }

    @Test func theMatchingStepIsReportedAndTenDigitsWork() throws {
        let totp = try TOTP(secret: Self.seeds[.sha1]!)
        let date = Date(timeIntervalSince1970: 1_111_111_111)  // step 37037037
        #expect(totp.matchingStep(totp.code(counter: 37_037_037), at: date) == 37_037_037)
        #expect(totp.matchingStep(totp.code(counter: 37_037_036), at: date) == 37_037_036)
        #expect(totp.matchingStep(totp.code(counter: 37_037_038), at: date) == 37_037_038)
        #expect(totp.matchingStep(totp.code(counter: 37_037_039), at: date) == nil)
        // Ten digits: the 31-bit value, zero-padded (10^10 does not fit in 32 bits).
        let ten = try TOTP(secret: Self.seeds[.sha1]!, digits: 10)
        #expect(ten.code(at: Date(timeIntervalSince1970: 59)) == "1094287082")
    }

    @Test func otpauthURIsCarryTheirParameters() throws {
        let uri =
            "otpauth://totp/Shiny:bob?secret=\(Self.seeds[.sha256]!.replacingOccurrences(of: "=", with: ""))"
            + "&algorithm=SHA256&digits=8&period=30&issuer=Shiny"
        let totp = try TOTP(secret: uri)
        #expect(totp.code(at: Date(timeIntervalSince1970: 59)) == "46119246")
        #expect(throws: TOTPError(.invalidSecret, "")) { try TOTP(secret: "not base32 !") }
        #expect(throws: TOTPError(.missingSecret, "")) { try TOTP(secret: "otpauth://totp/x?issuer=y") }
        #expect(throws: TOTPError(.unsupportedParameters, "")) { try TOTP(secret: Self.seeds[.sha1]!, digits: 4) }
    }

    /// RFC 7914, §12, the vector with p = 1: scrypt("pleaseletmein", "SodiumChloride", N = 16384,
    /// r = 8). Our hashes keep the first 32 bytes of the output (PBKDF2's first block, the same
    /// whatever the requested length).
    @Test func rfc7914Vector() {
        let salt = Data("SodiumChloride".utf8).base64EncodedString()
        let digest = Data(
            [
                0x70, 0x23, 0xbd, 0xcb, 0x3a, 0xfd, 0x73, 0x48, 0x46, 0x1c, 0x06, 0xcd, 0x81, 0xfd, 0x38, 0xeb,
                0xfd, 0xa8, 0xfb, 0xba, 0x90, 0x4f, 0x8e, 0x3e, 0xa9, 0xb5, 0x43, 0xf6, 0x54, 0x5d, 0xa1, 0xf2,
            ] as [UInt8]
        ).base64EncodedString()
        let encoded = "$scrypt$ln=14,r=8,p=1$\(salt)$\(digest)"
        #expect(PasswordHash.verify("pleaseletmein", against: encoded))
        #expect(!PasswordHash.verify("pleaseletmeIn", against: encoded))
        #expect(
            !PasswordHash.verify("pleaseletmein", against: encoded.replacingOccurrences(of: "ln=14", with: "ln=13"))
        )
    }

    @Test func hashesAreSaltedAndSelfDescribing() throws {
        let first = try PasswordHash.make("correct horse", logN: 10)
        let second = try PasswordHash.make("correct horse", logN: 10)
        #expect(first != second)
        #expect(first.hasPrefix("$scrypt$ln=10,r=8,p=1$"))
        #expect(PasswordHash.verify("correct horse", against: first))
        #expect(PasswordHash.verify("correct horse", against: second))
        #expect(!PasswordHash.verify("correct horse", against: "$scrypt$ln=10,r=8,p=1$garbage"))
    }
}
