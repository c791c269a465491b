import BreachCheck
import Foundation
import KeyhavenTesting
import PasswordStrength
import SecurityRecommendations
import Synchronization
import Testing
import Vault

/// The audit on a vault imported from a real-shaped export, with known answers for every issue kind.
struct AuditTests {
    /// A breach corpus: filler plus the passwords that should count as breached.
    static func breachIndex(in directory: URL, breached: [String: Int]) throws -> BreachIndex {
        var lines = (0..<5000).map { "\(SHA1Digest(password: "filler-\($0)").hex):\($0 + 1)" }
        for (password, count) in breached {
            lines.append("\(SHA1Digest(password: password).hex):\(count)")
        }
        let source = directory.appendingPathComponent("pwned.txt")
        try Data(lines.joined(separator: "\r\n").utf8).write(to: source)
        let output = directory.appendingPathComponent("pwned.khbi")
        _ = try BreachIndexBuilder(kind: .full).build(input: source, output: output)
        return try BreachIndex(url: output)
    }

    static let expected: [String: (issues: [AuditIssue], severity: AuditSeverity)] = [
        "github.com": ([], .none),
        "gitlab.com": ([.reused], .reused),
        "bitbucket.org": ([.reused], .reused),
        "www.safeway.com": ([], .none),  // shares its backend with vons.com (Apple's list)
        "www.vons.com": ([], .none),
        "login.example.com": ([], .none),  // same site as example.com
        "example.com": ([], .none),
        "my.a2hosting.com": ([], .none),  // a2hosting.com moved to hosting.com
        "hosting.com": ([], .none),
        "forum.example.org": ([.breached, .weak], .high),
        "myblog.example.net": ([.weak], .weak),  // built from the user name
        "site-a.example": ([.reused, .weak], .reusedAndWeak),
        "site-b.example": ([.reused, .weak], .reusedAndWeak),
        "com.example.bank": ([.weak], .weak),  // PIN 1234
        "cards.example": ([], .none),  // a random 6-digit PIN is fine
        "locker.example": ([.weak], .weak),  // PIN 123321
        "legacy.example.net": ([.unsecured], .unsecured),
        "leaked.example": ([.breached], .high),
    ]

    @Test func knownAnswersForEveryIssueKind() async throws {
        let test = try TestVault()
        let report0 = try test.vault.importFile(Fixtures.url("audit-chrome.csv"))
        #expect(report0.imported == 18)
        let index = try Self.breachIndex(
            in: test.directory,
            breached: ["password1": 2_413_945, "Sunflower-Orbit-7765!": 3]
        )
        let audit = SecurityAudit(breachSource: .index(index))
        let (report, _) = await audit.run(try test.vault.list().credentials)
        #expect(report.items.count == 18)
        for item in report.items {
            guard let expected = Self.expected[item.service] else {
                Issue.record("unexpected service \(item.service)")
                continue
            }
            #expect(item.issues == expected.issues, "\(item.service)")
            #expect(item.severity == expected.severity, "\(item.service)")
            #expect(item.password == nil)
        }
        let forum = report.items.first { $0.service == "forum.example.org" }!
        #expect(forum.breachCount == 2_413_945)
        let gitlab = report.items.first { $0.service == "gitlab.com" }!
        let bitbucket = report.items.first { $0.service == "bitbucket.org" }!
        #expect(gitlab.reusedWith == [bitbucket.id])
        // Sorted by severity first.
        #expect(report.items.map(\.severity) == report.items.map(\.severity).sorted())
        #expect(report.summary.breached == 2)
        #expect(report.summary.reused == 4)
        #expect(report.summary.weak == 6)
        #expect(report.summary.unsecured == 1)
        #expect(report.summary.withIssues == 10)
        #expect(report.summary.bySeverity[.high] == 2)
        #expect(report.summary.breachCheck == .index)
    }

    @Test func resultsAreDeterministicAndRevealIsOptIn() async throws {
        let test = try TestVault()
        _ = try test.vault.importFile(Fixtures.url("audit-chrome.csv"))
        let credentials = try test.vault.list().credentials
        let audit = SecurityAudit(breachSource: .none(reason: "test"))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let first = try encoder.encode(await audit.run(credentials).report)
        let second = try encoder.encode(await audit.run(credentials.reversed()).report)
        #expect(first == second)
        #expect(!String(decoding: first, as: UTF8.self).contains("qwerty123"))
        var revealing = audit
        revealing.reveal = true
        let revealed = try encoder.encode(await revealing.run(credentials).report)
        #expect(String(decoding: revealed, as: UTF8.self).contains("qwerty123"))
        let report = await audit.run(credentials).report
        #expect(report.summary.breachCheck == .skipped)
        #expect(report.summary.notices.contains { $0.contains("breach check skipped") })
        #expect(report.items.allSatisfy { $0.breachCount == nil })
    }

    /// A clock that moves one second each time it is read: stage timings become exact.
    struct SteppingClock: Clock {
        struct Instant: InstantProtocol {
            var offset: Duration
            func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
            func duration(to other: Instant) -> Duration { other.offset - offset }
            static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        }

        final class Ticks: Sendable {
            let value = Synchronization.Mutex(Duration.zero)
        }

        let ticks = Ticks()
        var now: Instant {
            Instant(
                offset: ticks.value.withLock {
                    $0 += .seconds(1)
                    return $0
                }
            )
        }
        var minimumResolution: Duration { .zero }
        func sleep(until deadline: Instant, tolerance: Duration?) async throws {}
    }

    /// Timings are measured on the audit's clock (no `Date()` inside the audit), and the summary's
    /// typed counts and breach mode encode as they always did (`keyhaven audit --json`).
    @Test func timingsComeFromTheInjectedClockAndTheSummaryKeepsItsJSON() async throws {
        let test = try TestVault()
        _ = try test.vault.importFile(Fixtures.url("audit-chrome.csv"))
        let audit = SecurityAudit(breachSource: .none(reason: "test"), clock: SteppingClock())
        let (report, timings) = await audit.run(try test.vault.list().credentials)
        #expect(timings.stages.map(\.name) == ["breach check", "reuse", "strength", "actions and report"])
        #expect(timings.stages.allSatisfy { $0.seconds == 1 })
        #expect(report.summary.bySeverity[.reusedAndWeak] == 2)
        let json = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(report.summary)) as? [String: Any]
        )
        #expect((json["bySeverity"] as? [String: Int])?["reused-and-weak"] == 2)
        #expect((json["bySeverity"] as? [String: Int])?.count == AuditSeverity.allCases.count)
        #expect(json["breachCheck"] as? String == "skipped")
        #expect(json["pendingSites"] as? Int == 0)
    }

    @Test func theRangeAPIIsUsedWhenThereIsNoIndex() async throws {
        struct Transport: RangeTransport {
            func fetchRange(prefix: String) async throws -> RangeHTTPResponse {
                let digest = SHA1Digest(password: "password1")
                let body = prefix == digest.prefix ? "\(digest.suffix):99\r\n" : ""
                return RangeHTTPResponse(status: 200, body: Array(body.utf8))
            }
        }
        let test = try TestVault()
        _ = try test.vault.importFile(Fixtures.url("audit-chrome.csv"))
        let audit = SecurityAudit(breachSource: .api(RangeClient(transport: Transport())))
        let report = await audit.run(try test.vault.list().credentials).report
        #expect(report.summary.breachCheck == .api)
        #expect(report.items.filter { $0.issues.contains(.breached) }.map(\.service) == ["forum.example.org"])
    }

    @Test func upgradedAccountsWithoutPasswordsAreNotFlagged() async throws {
        let test = try TestVault()
        try test.vault.add(
            CredentialContent(
                services: [.init("https://shiny.example")],
                user: "alice",
                password: nil,
                signIn: SignInLink(issuer: "https://idp.example", subject: "1", linked: Date())
            )
        )
        let report = await SecurityAudit(breachSource: .none(reason: "test")).run(try test.vault.list().credentials)
            .report
        #expect(report.items.count == 1)
        #expect(report.items[0].issues.isEmpty)
    }
}

struct WeakPasswordPolicyTests {
    @Test(arguments: [
        ("1234", true), ("0000", true), ("8765", true), ("1212", true), ("2580", true), ("123123", true),
        ("123321", true), ("112233", true), ("654321", true), ("482913", false), ("9371", false), ("027415", false),
        ("5683", false), ("0712", false),  // brute force; a date reading that saves an attacker little
        ("password", true), ("Tr0ub4dour&3", true), ("correcthorsebatterystaple", false),
        ("12345", true),  // not a PIN length: zxcvbn decides
    ])
    func pinsAndPasswords(_ password: String, _ weak: Bool) {
        #expect(WeakPasswordPolicy().judge(password, userInputs: []).isWeak == weak)
    }

    /// Issue 13 item 14: PINs that Apple's PIN rules call fine but zxcvbn finds in its dictionaries
    /// or patterns. Before, the PIN rules had the last word and cleared every one of these.
    @Test(arguments: [
        ("147852", "This is a very common password."),  // keypad zigzag, in the password list
        ("741852", "This is a very common password."),
        ("314159", "This is a very common password."),  // π
        ("123000", "This is a very common password."),
        ("1225", "This is a very common password."),  // Christmas
        ("7410", "Short keyboard patterns are easy to guess."),  // a keypad column
        ("1990", "Recent years are easy to guess."),
        ("010199", "Dates are often easy to guess."),  // 1 January 1999
        ("198712", "Dates are often easy to guess."),
    ])
    func pinRulesNeverClearAZxcvbnFinding(_ pin: String, _ warning: String) {
        #expect(WeakPasswordPolicy.pinRuleFinding(pin) == nil, "the PIN rules alone call \(pin) fine")
        let estimate = StrengthEstimator.shared.estimate(pin)
        #expect(WeakPasswordPolicy.zxcvbnFindsPattern(estimate, digits: pin.count))
        let verdict = WeakPasswordPolicy().judge(pin, userInputs: [])
        #expect(verdict.isWeak)
        #expect(verdict.reason == warning)
        #expect(verdict.score == estimate.score)
    }

    /// The person's own number is in zxcvbn's dictionary of user inputs.
    @Test func aPinThatIsTheUsersOwnNumberIsWeak() {
        #expect(!WeakPasswordPolicy().judge("482913", userInputs: []).isWeak)
        let inputs = WeakPasswordPolicy.userInputs(user: "482913@bank.example", domain: "bank.example")
        let verdict = WeakPasswordPolicy().judge("482913", userInputs: inputs)
        #expect(verdict.isWeak)
        #expect(WeakPasswordPolicy.pinRuleFinding("482913") == nil)
    }

    /// Over every 4-digit PIN: each PIN-rule finding and each zxcvbn finding makes it weak (the two
    /// only add up), and what zxcvbn merely brute-forces, or reads as a date that saves little,
    /// stays fine.
    @Test func everyFourDigitPinIsWeakWhenEitherJudgeSaysSo() {
        let policy = WeakPasswordPolicy()
        var weak = 0
        for value in 0..<10_000 {
            let pin = String(format: "%04d", value)
            let estimate = StrengthEstimator.shared.estimate(pin)
            let byRules = WeakPasswordPolicy.pinRuleFinding(pin) != nil
            let byZxcvbn = WeakPasswordPolicy.zxcvbnFindsPattern(estimate, digits: 4)
            let verdict = policy.judge(pin, userInputs: [])
            #expect(verdict.isWeak == (byRules || byZxcvbn), "\(pin)")
            if verdict.isWeak { weak += 1 }
        }
        // Most PINs stay fine: zxcvbn's findings are specific, not "any 4 digits".
        #expect(weak > 400 && weak < 1_000, "\(weak) weak 4-digit PINs")
    }

    @Test func userNameAndDomainCountAsUserInputs() {
        let inputs = WeakPasswordPolicy.userInputs(user: "alice.smith@mail.example", domain: "accounts.shiny.example")
        #expect(inputs == ["alice.smith@mail.example", "alice", "smith", "accounts", "shiny"])
        let with = StrengthEstimator.shared.estimate("smithshiny", userInputs: inputs)
        let without = StrengthEstimator.shared.estimate("smithshiny")
        #expect(with.guessesLog10 < without.guessesLog10)
        #expect(WeakPasswordPolicy().judge("smithshiny", userInputs: inputs).isWeak)
    }
}

struct ReuseDetectorTests {
    @Test func backends() {
        let detector = ReuseDetector.shared
        #expect(detector.backend(of: "www.safeway.com") == detector.backend(of: "vons.com"))
        #expect(detector.backend(of: "a2hosting.com") == detector.backend(of: "hosting.com"))
        #expect(detector.backend(of: "login.example.com") == detector.backend(of: "example.com"))
        #expect(detector.backend(of: "a.example.co.uk") == "example.co.uk")
        #expect(detector.backend(of: "gitlab.com") != detector.backend(of: "github.com"))
    }
}
