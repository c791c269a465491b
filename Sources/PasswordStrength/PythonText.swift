import Foundation

/// Text semantics of CPython 3, which the reference zxcvbn (python `zxcvbn` 4.5.0) inherits: strings
/// are sequences of code points, `str.lower()` is full Unicode lower-casing with the final-sigma
/// rule, and the regular expressions' `\d`, `\s` and `.` are Unicode-aware. Matching these exactly is
/// what makes scores identical on non-ASCII passwords.
enum PythonText {
    /// `str.lower()`: full lower-case mapping, Σ → ς at the end of a word.
    static func lower(_ scalars: [Unicode.Scalar]) -> [Unicode.Scalar] {
        var result: [Unicode.Scalar] = []
        result.reserveCapacity(scalars.count)
        for (index, scalar) in scalars.enumerated() {
            if scalar.isASCII {
                let value = scalar.value
                result.append(value >= 0x41 && value <= 0x5A ? Unicode.Scalar(value + 32)! : scalar)
            } else if scalar.value == 0x3A3 {
                result.append(isFinalSigma(scalars, at: index) ? "\u{3C2}" : "\u{3C3}")
            } else {
                result.append(contentsOf: scalar.properties.lowercaseMapping.unicodeScalars)
            }
        }
        return result
    }

    /// Whether lower-casing changes nothing (`s.lower() == s`).
    static func isLowercase(_ scalars: ArraySlice<Unicode.Scalar>) -> Bool {
        for scalar in scalars {
            if scalar.isASCII {
                if scalar.value >= 0x41 && scalar.value <= 0x5A { return false }
            } else if scalar.value == 0x3A3 || scalar.properties.changesWhenLowercased {
                return false
            }
        }
        return true
    }

    /// CPython's `handle_capital_sigma`.
    private static func isFinalSigma(_ scalars: [Unicode.Scalar], at index: Int) -> Bool {
        var j = index - 1
        while j >= 0 && scalars[j].properties.isCaseIgnorable {
            j -= 1
        }
        guard j >= 0 && scalars[j].properties.isCased else { return false }
        j = index + 1
        while j < scalars.count && scalars[j].properties.isCaseIgnorable {
            j += 1
        }
        return j == scalars.count || !scalars[j].properties.isCased
    }

    /// `re`'s `\d`: a Unicode decimal digit (category Nd).
    @inline(__always)
    static func isDecimalDigit(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return scalar.value >= 0x30 && scalar.value <= 0x39 }
        return scalar.properties.numericType == .decimal
    }

    /// The value `int()` gives a decimal digit.
    @inline(__always)
    static func digitValue(_ scalar: Unicode.Scalar) -> Int {
        if scalar.isASCII { return Int(scalar.value) - 0x30 }
        return Int(scalar.properties.numericValue ?? 0)
    }

    /// `int()` of a run of decimal digits, ignoring the trailing newline that `$` lets through.
    static func integer(_ scalars: ArraySlice<Unicode.Scalar>) -> Int {
        var value = 0
        for scalar in scalars where scalar != "\n" {
            value = value * 10 + digitValue(scalar)
        }
        return value
    }

    /// `re`'s `\s` (`str.isspace()`): bidirectional classes WS, B, S and category Zs.
    @inline(__always)
    static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x1C...0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
            return true
        default:
            return false
        }
    }

    /// `str.isupper()` / `str.islower()` of one character (the Unicode Uppercase / Lowercase properties).
    @inline(__always)
    static func isUpper(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII ? (scalar.value >= 0x41 && scalar.value <= 0x5A) : scalar.properties.isUppercase
    }

    @inline(__always)
    static func isLower(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII ? (scalar.value >= 0x61 && scalar.value <= 0x7A) : scalar.properties.isLowercase
    }

    @inline(__always)
    static func isASCIIUpper(_ scalar: Unicode.Scalar) -> Bool { scalar.value >= 0x41 && scalar.value <= 0x5A }

    @inline(__always)
    static func isASCIILower(_ scalar: Unicode.Scalar) -> Bool { scalar.value >= 0x61 && scalar.value <= 0x7A }

    /// `math.log(x, 10)`, which CPython computes as `log(x) / log(10)` (so 1000 gives 2.9999999999999996).
    @inline(__always)
    static func log10(_ x: Double) -> Double { log(x) / log(10.0) }

    /// Python's `nCk` in zxcvbn: true division at every step, so a float for k ≥ 2.
    static func nCk(_ n: Int, _ k: Int) -> Double {
        if k > n { return 0 }
        if k == 0 { return 1 }
        var n = Double(n)
        var r = 1.0
        for d in 1...k {
            r *= n
            r /= Double(d)
            n -= 1
        }
        return r
    }
}
