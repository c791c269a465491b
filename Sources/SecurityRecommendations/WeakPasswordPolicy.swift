public import PasswordStrength

/// "Easily guessed", as Apple's Security Recommendations and Bitwarden decide it.
///
/// - A password of exactly 4 or 6 digits is judged as a PIN (Apple's separate rules): weak when it
///   is one of the most common PINs, an ascending or descending run (`1234`, `8765`), or a
///   repetition (`1111`, `1212`, `123123`, `123321`) — **or** when zxcvbn finds it in its
///   dictionaries or patterns: a common password (`147852`, `123000`, `1225`), a keypad shape
///   (`7410`), a recent year (`1990`), a date (`010199`), the user's own name or number. The PIN
///   rules only add findings; they never clear one zxcvbn made. zxcvbn "finds" a PIN when its
///   patterns account for every digit (no brute-forced part) and at least halve the guesses random
///   digits would need. That leaves out zxcvbn's loose readings of most digit strings as some date
///   (`9371` as 9/3/71 saves an attacker a fifth; `482913` is brute force plus a date) and a PIN
///   it can only brute-force: a 6-digit random PIN is as good as a PIN gets, and its length alone
///   (zxcvbn scores every 4- or 6-digit string 2 or less) does not make it weak.
/// - Anything else is weak when zxcvbn scores it 2 or less (Bitwarden's threshold), with the user
///   name (and its parts) and the service's domain labels as user inputs.
public struct WeakPasswordPolicy: Sendable {
    public let estimator: StrengthEstimator

    public init(estimator: StrengthEstimator = .shared) {
        self.estimator = estimator
    }

    public struct Verdict: Sendable {
        public var isWeak: Bool
        public var score: Int?
        public var reason: String?
    }

    /// The most common 4- and 6-digit PINs (DataGenetics' PIN analysis and the top of the zxcvbn
    /// password list): a short list on purpose, patterns catch the rest.
    static let commonPINs: Set<String> = [
        "1234", "1111", "0000", "1212", "7777", "1004", "2000", "4444", "2222", "6969", "9999", "3333", "5555",
        "6666", "1122", "1313", "8888", "4321", "2001", "1010", "2580", "0852", "1998", "1999", "2468",
        "123456", "111111", "000000", "121212", "123123", "654321", "666666", "696969", "112233", "123321",
        "159753", "252525", "131313", "987654", "777777", "999999", "555555", "222222", "333333", "444444",
        "888888", "102030", "147258", "159357", "007007", "520520", "101010", "121314", "789456",
    ]

    public func judge(_ password: String, userInputs: [String]) -> Verdict {
        let estimate = estimator.estimate(password, userInputs: userInputs)
        if let digits = Self.pinDigits(password) {
            if let reason = Self.pinRuleFinding(password) {
                return Verdict(isWeak: true, score: nil, reason: reason)
            }
            // zxcvbn's finding stands: a PIN it guesses sooner than random digits because it knows
            // them (a dictionary, keypad, date, year, sequence or repeat), not merely because they
            // are few.
            if Self.zxcvbnFindsPattern(estimate, digits: digits.count) {
                return Self.zxcvbnVerdict(estimate)
            }
            return Verdict(isWeak: false, score: nil, reason: nil)
        }
        guard estimate.score <= 2 else {
            return Verdict(isWeak: false, score: estimate.score, reason: nil)
        }
        return Self.zxcvbnVerdict(estimate)
    }

    /// The digits of a password of exactly 4 or 6 ASCII digits (a PIN); nil for anything else.
    static func pinDigits(_ password: String) -> [Int]? {
        let scalars = Array(password.unicodeScalars)
        guard scalars.count == 4 || scalars.count == 6, scalars.allSatisfy({ $0.value >= 48 && $0.value <= 57 })
        else { return nil }
        return scalars.map { Int($0.value) - 48 }
    }

    /// Why Apple's PIN rules call `password` weak (a common PIN, a run, a repetition); nil when they
    /// do not, or when it is not a 4- or 6-digit PIN.
    public static func pinRuleFinding(_ password: String) -> String? {
        guard let digits = pinDigits(password) else { return nil }
        if commonPINs.contains(password) { return "one of the most common PINs" }
        if isRun(digits) { return "a PIN that counts up or down" }
        if isRepetition(digits) { return "a PIN made of a repeated or mirrored pattern" }
        return nil
    }

    /// Whether zxcvbn finds a PIN of `digits` digits in its dictionaries or patterns: they account
    /// for every digit (no brute-force match) and at least halve the 10^digits guesses of random
    /// digits.
    public static func zxcvbnFindsPattern(_ estimate: StrengthEstimate, digits: Int) -> Bool {
        let randomDigits = (0..<digits).reduce(1.0) { value, _ in value * 10 }
        return !estimate.sequence.isEmpty && estimate.sequence.allSatisfy { $0.pattern != .bruteforce }
            && estimate.guesses * 2 <= randomDigits
    }

    /// Weak, in zxcvbn's words.
    static func zxcvbnVerdict(_ estimate: StrengthEstimate) -> Verdict {
        let warning = estimate.feedback.warning
        return Verdict(
            isWeak: true,
            score: estimate.score,
            reason: warning.isEmpty ? "easy to guess (strength \(estimate.score) of 4)" : warning
        )
    }

    /// 1234, 8765, 0123…: each digit one more (or one less) than the last.
    static func isRun(_ digits: [Int]) -> Bool {
        let steps = zip(digits.dropFirst(), digits).map { $0 - $1 }
        return steps.allSatisfy { $0 == 1 } || steps.allSatisfy { $0 == -1 }
    }

    /// 1111, 1212, 123123, 121212, 112233, 123321, 1221.
    static func isRepetition(_ digits: [Int]) -> Bool {
        if Set(digits).count == 1 { return true }
        if digits == digits.reversed() { return true }
        for period in [1, 2, 3] where digits.count % period == 0 && period < digits.count {
            if digits.indices.allSatisfy({ digits[$0] == digits[$0 % period] }) { return true }
        }
        // Doubled digits: 112233, 1122.
        if stride(from: 0, to: digits.count, by: 2).allSatisfy({ digits[$0] == digits[$0 + 1] }) { return true }
        return false
    }

    /// The user inputs for a credential, as Bitwarden builds them: the user name (or e-mail local
    /// part) split on non-alphanumerics into tokens of 3+ characters, the whole user name, and the
    /// service's domain labels (without the top-level domain).
    public static func userInputs(user: String, domain: String?) -> [String] {
        var inputs: [String] = []
        let local = user.split(separator: "@").first.map(String.init) ?? user
        if !user.isEmpty { inputs.append(user) }
        for token in local.split(whereSeparator: { !$0.isLetter && !$0.isNumber }) where token.count >= 3 {
            inputs.append(String(token))
        }
        if let domain {
            let labels = domain.split(separator: ".").map(String.init)
            for label in labels.dropLast() where label.count >= 3 && label != "www" {
                inputs.append(label)
            }
        }
        return inputs
    }
}
