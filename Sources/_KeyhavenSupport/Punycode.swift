/// RFC 3492 Punycode, encoding only: the ASCII (`xn--`) form of an internationalised domain label,
/// so that a host written in Unicode and the same host as a browser sends it compare equal.
///
/// This is the Bootstring algorithm with Punycode's parameters; it does not apply IDNA's mapping
/// (UTS #46): callers lower-case first, which covers the hosts Keyhaven compares.
enum Punycode {
    private static let base = 36
    private static let tMin = 1
    private static let tMax = 26
    private static let skew = 38
    private static let damp = 700
    private static let initialBias = 72
    private static let initialN: UInt32 = 128

    /// The `xn--` form of `label`, or `label` itself when it is all ASCII. Nil on overflow.
    static func asciiLabel(_ label: Substring) -> String? {
        guard label.unicodeScalars.contains(where: { !$0.isASCII }) else { return String(label) }
        return encode(label).map { "xn--" + $0 }
    }

    /// The ASCII form of every label of `host` (labels separated by dots).
    static func asciiHost(_ host: String) -> String? {
        var labels: [String] = []
        for label in host.split(separator: ".", omittingEmptySubsequences: false) {
            guard let ascii = asciiLabel(label) else { return nil }
            labels.append(ascii)
        }
        return labels.joined(separator: ".")
    }

    /// Bootstring encoding of `input` (without the `xn--` prefix).
    static func encode(_ input: Substring) -> String? {
        let scalars = input.unicodeScalars.map(\.value)
        var output = String(String.UnicodeScalarView(input.unicodeScalars.filter(\.isASCII)))
        let basicCount = output.unicodeScalars.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }

        var n = initialN
        var delta = 0
        var bias = initialBias
        while handled < scalars.count {
            guard let next = scalars.filter({ $0 >= n }).min() else { return nil }
            let (step, overflow) = Int(next - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow else { return nil }
            delta += step
            n = next
            for scalar in scalars {
                if scalar < n { delta += 1 }
                guard scalar == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta: delta, points: handled + 1, first: handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return output
    }

    private static func digit(_ value: Int) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? 97 + value : 22 + value)))
    }

    private static func adapt(delta: Int, points: Int, first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / points
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }
}
