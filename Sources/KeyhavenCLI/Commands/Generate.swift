import ArgumentParser
import PasswordRules

extension Keyhaven {
    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Generate strong passwords.",
            discussion: """
                Without options, passwords use Apple's format: 20 characters like hupvEw-fodne1-qabjyg \
                (consonant–vowel syllables, one upper-case letter, one digit; about 71 bits).

                --rules takes a password-rules string (Apple's language, as in the HTML passwordrules \
                attribute); --domain uses the per-site rules Apple publishes for that domain, if any. \
                Apple's format is kept whenever the rules allow it; otherwise characters are drawn \
                uniformly from what the rules allow, at the longest length they allow up to 20 \
                (longer for small alphabets).

                --words N makes a passphrase instead: N words drawn uniformly from the EFF's Long \
                Wordlist (7776 words, CC BY 3.0 US), log2(7776) ≈ 12.9 bits each; the entropy is \
                printed on standard error (or in --json). Six words (≈ 77.5 bits) suit a master \
                password.

                Examples:
                  keyhaven generate
                  keyhaven generate --domain example.com -n 3
                  keyhaven generate --words 6
                  keyhaven generate --words 5 --separator " " --json
                """
        )

        @Option(name: .long, help: ArgumentHelp("Password rules to satisfy.", valueName: "rules"))
        var rules: String?

        @Option(
            name: .long,
            help: ArgumentHelp("Use the published password rules of this domain.", valueName: "domain")
        )
        var domain: String?

        @Option(name: [.customShort("n"), .long], help: "How many passwords to print.")
        var count: Int = 1

        @Option(name: .long, help: ArgumentHelp("Make a passphrase of this many words.", valueName: "n"))
        var words: Int?

        @Option(name: .long, help: ArgumentHelp("What goes between the words (default -).", valueName: "text"))
        var separator: String?

        @Flag(name: .long, help: "Print one JSON object with the passwords, the rules used and the style.")
        var json = false

        func validate() throws {
            if rules != nil && domain != nil {
                throw ValidationError("use either --rules or --domain, not both")
            }
            if count < 1 {
                throw ValidationError("--count must be at least 1")
            }
            if let words {
                guard words >= 1 else { throw ValidationError("--words must be at least 1 (6 is a good choice)") }
                if rules != nil || domain != nil {
                    throw ValidationError("--words makes a passphrase; it does not take --rules or --domain")
                }
            } else if separator != nil {
                throw ValidationError("--separator goes with --words N")
            }
        }

        struct Report: Encodable {
            var passwords: [String]
            var rules: String?
            var source: String
            var style: String
            var bits: Double
        }

        func run() throws {
            if let words {
                try passphrases(words: words)
                return
            }
            var source = "default"
            var ruleSet: PasswordRules?
            var ruleText: String?
            if let rules {
                let parsed = PasswordRules.parse(rules)
                for diagnostic in parsed.diagnostics(atLeast: .warning) {
                    Output.error("keyhaven: warning: rules: \(diagnostic)")
                }
                ruleSet = parsed.rules
                ruleText = rules
                source = "rules"
            } else if let domain {
                let choice = ServicePasswordRules(requirements: nil, domains: [domain])
                ruleSet = choice.rules
                ruleText = choice.ruleText
                if choice.source == .appleFormat {
                    Output.error("keyhaven: note: no published password rules for \(domain); using the default format")
                } else {
                    source = choice.source.description
                }
            }

            let generator: PasswordGenerator
            do {
                generator =
                    try ruleSet.map { (rules) throws(PasswordGenerationError) in
                        try PasswordGenerator(rules: rules)
                    } ?? PasswordGenerator()
            } catch {
                throw Output.failure("these rules cannot be met: \(error.message)")
            }
            var passwords: [String] = []
            passwords.reserveCapacity(json ? count : 0)
            for _ in 0..<count {
                let password: String
                do {
                    password = try generator.generate()
                } catch {
                    throw Output.failure(error.message)
                }
                if json {
                    passwords.append(password)
                } else {
                    print(password)
                }
            }
            if json {
                let style: String
                switch generator.style {
                case .appleFormat(let dashes): style = dashes ? "apple" : "apple-without-dashes"
                case .random: style = "random"
                }
                let canonical = ruleText.map(PasswordRules.canonical)
                print(
                    try Output.jsonLine(
                        Report(
                            passwords: passwords,
                            rules: canonical,
                            source: source,
                            style: style,
                            bits: (generator.estimatedBits * 10).rounded() / 10
                        )
                    )
                )
            }
        }

        private func passphrases(words: Int) throws {
            let passphrase = Passphrase(words: words, separator: separator ?? "-")
            var rng = SystemRandomNumberGenerator()
            let phrases = (0..<count).map { _ in passphrase.generate(using: &rng) }
            let bits = (passphrase.bits * 10).rounded() / 10
            if json {
                print(
                    try Output.jsonLine(
                        Report(
                            passwords: phrases,
                            rules: nil,
                            source: "eff-large-wordlist",
                            style: "passphrase",
                            bits: bits
                        )
                    )
                )
            } else {
                for phrase in phrases { print(phrase) }
                Output.error(
                    "\(words) word\(words == 1 ? "" : "s") from the EFF's Long Wordlist: \(bits) bits of entropy"
                )
            }
        }
    }
}
