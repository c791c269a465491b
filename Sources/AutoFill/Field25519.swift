/// An element of GF(2^255 − 19), just enough arithmetic for CPace's generator (Elligator 2). Sixteen
/// signed limbs of 16 bits, value = Σ limbs[i]·2^(16·i), as in TweetNaCl: every operation runs the
/// same steps whatever the values (no branch or index depends on them), because the generator is
/// derived from the pairing code.
struct Field25519 {
    private(set) var limbs: [Int64]

    private init(limbs: [Int64]) {
        self.limbs = limbs
    }

    /// A small constant.
    init(_ value: Int64) {
        precondition(value >= 0 && value < 1 << 32)
        limbs = [Int64](repeating: 0, count: 16)
        limbs[0] = value & 0xffff
        limbs[1] = value >> 16
    }

    /// RFC 7748's `decodeUCoordinate(bytes, 255)`: 32 bytes little-endian, bit 255 ignored. The value
    /// may be p or more (it is reduced as it is used).
    init(littleEndian bytes: [UInt8]) {
        precondition(bytes.count == 32)
        limbs = (0..<16).map { Int64(bytes[2 * $0]) | Int64(bytes[2 * $0 + 1]) << 8 }
        limbs[15] &= 0x7fff
    }

    static let zero = Field25519(0)
    static let one = Field25519(1)

    /// The canonical encoding: 32 bytes little-endian of the value in [0, p).
    var littleEndian: [UInt8] {
        var t = (self * .one).limbs
        for _ in 0..<3 { Self.carry(&t) }
        // Now 0 ≤ t < 2^256: subtract p while it is still at least p (at most twice), selecting
        // the difference with a mask rather than a branch.
        for _ in 0..<2 {
            var m = [Int64](repeating: 0, count: 16)
            m[0] = t[0] - 0xffed
            for i in 1..<15 {
                m[i] = t[i] - 0xffff - ((m[i - 1] >> 16) & 1)
                m[i - 1] &= 0xffff
            }
            m[15] = t[15] - 0x7fff - ((m[14] >> 16) & 1)
            let borrow = (m[15] >> 16) & 1
            m[14] &= 0xffff
            Self.select(&t, m, take: 1 - borrow)
        }
        return t.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] }
    }

    /// Moves each limb's bits above 16 into the next one; the top limb's carry c comes back as
    /// 38·c into the lowest (2^256 ≡ 38 mod p).
    private static func carry(_ t: inout [Int64]) {
        for i in 0..<16 {
            let c = t[i] >> 16  // arithmetic: limbs may be negative after a subtraction
            t[i] -= c << 16
            if i < 15 { t[i + 1] += c } else { t[0] += 38 * c }
        }
    }

    /// `t = take == 1 ? other : t` without a branch (`take` is 0 or 1).
    private static func select(_ t: inout [Int64], _ other: [Int64], take: Int64) {
        let mask = ~(take - 1)
        for i in 0..<16 { t[i] ^= mask & (t[i] ^ other[i]) }
    }

    static func + (a: Self, b: Self) -> Self {
        Self(limbs: (0..<16).map { a.limbs[$0] + b.limbs[$0] })
    }

    static func - (a: Self, b: Self) -> Self {
        Self(limbs: (0..<16).map { a.limbs[$0] - b.limbs[$0] })
    }

    static prefix func - (a: Self) -> Self { .zero - a }

    static func * (a: Self, b: Self) -> Self {
        var product = [Int64](repeating: 0, count: 31)
        for i in 0..<16 {
            for j in 0..<16 { product[i + j] += a.limbs[i] * b.limbs[j] }
        }
        for i in 0..<15 { product[i] += 38 * product[i + 16] }
        var t = Array(product[0..<16])
        carry(&t)
        carry(&t)
        return Self(limbs: t)
    }

    /// `self^exponent`, the exponent public (32 bytes little-endian): square and multiply.
    func power(_ exponent: [UInt8]) -> Self {
        var result = Self.one
        for bit in (0..<256).reversed() {
            result = result * result
            if (exponent[bit / 8] >> (bit % 8)) & 1 == 1 { result = result * self }
        }
        return result
    }

    /// p − 2 and (p − 1)/2, little-endian.
    private static let pMinusTwo: [UInt8] = [0xeb] + [UInt8](repeating: 0xff, count: 30) + [0x7f]
    private static let pMinusOneHalf: [UInt8] = [0xf6] + [UInt8](repeating: 0xff, count: 30) + [0x3f]

    /// The inverse (Fermat); zero for zero.
    var inverse: Self { power(Self.pMinusTwo) }

    /// Euler's criterion: 1 for a non-zero square, p − 1 for a non-square, 0 for zero.
    var legendre: Self { power(Self.pMinusOneHalf) }
}

extension Field25519 {
    /// Curve25519's A.
    static let curveA = Field25519(486_662)

    /// `map_to_curve_elligator2` of RFC 9380 for Curve25519 (Z = 2), the u-coordinate only, as
    /// draft-irtf-cfrg-cpace's reference code writes it:
    /// v = −A / (1 + 2r²); ε = (v³ + Av² + v)^((p−1)/2); u = εv − (1 − ε)·A/2.
    /// 1 + 2r² is never zero (−1/2 is not a square mod p), and v³ + Av² + v never is either
    /// (A² − 4 is not a square), so ε is ±1: u = v on the curve, or −v − A.
    static func elligator2(_ r: Field25519) -> Field25519 {
        let v = -(curveA * (one + Field25519(2) * r * r).inverse)
        let epsilon = (v * v * v + curveA * v * v + v).legendre
        return epsilon * v - (one - epsilon) * Field25519(243_331)  // A/2
    }
}
