import ArgumentParser
import PasswordRules

extension Keyhaven {
    struct Rules: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Work with Apple's password-rules language.",
            discussion: """
                Rules look like: required: upper; required: digit; allowed: lower,[-_]; minlength: 8; \
                maxlength: 20;  The parser follows Apple's exactly, including how it recovers from \
                mistakes; every recovery is reported on standard error.
                """,
            subcommands: [Canonical.self, Check.self, Lookup.self]
        )
    }
}

extension Keyhaven.Rules {
    struct Canonical: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print rules in Apple's canonical display form.",
            discussion: """
                With "-", reads one rule per line from standard input and prints one canonical rule \
                per input line, in order; a rule that parses to nothing prints an empty line. \
                Errors and warnings go to standard error, prefixed with the input line number; \
                --verbose adds notices (recoveries Apple's parser makes silently).
                """
        )

        @Argument(help: ArgumentHelp("A rule string, or - to read rules from standard input.", valueName: "rule"))
        var rule: String

        @Flag(name: .long, help: "Exit with status 1 when any rule has an error or a warning.")
        var strict = false

        @Flag(
            name: .shortAndLong,
            help: "Also report notices: recoveries Apple's parser makes silently (e.g. non-ASCII in a class)."
        )
        var verbose = false

        @Flag(
            name: .long,
            help: """
                Print the generator view instead: required classes also listed as allowed, and \
                allowed: ascii-printable when the rule allows nothing explicitly.
                """
        )
        var expanded = false

        func run() throws {
            var sawDiagnostic = false
            func handle(_ text: String, label: String) {
                let result = PasswordRules.parse(text, view: expanded ? .generator : .display)
                for diagnostic in result.diagnostics(atLeast: verbose ? .notice : .warning) {
                    sawDiagnostic = sawDiagnostic || diagnostic.severity >= .warning
                    Output.error("keyhaven: \(label)\(diagnostic)")
                }
                print(result.rules.description)
            }
            if rule == "-" {
                for (index, line) in Output.standardInputLines().enumerated() {
                    handle(line, label: "line \(index + 1): ")
                }
            } else {
                handle(rule, label: "")
            }
            if strict && sawDiagnostic {
                throw ExitCode(1)
            }
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check passwords against rules.",
            discussion: """
                Prints one line per password, in order: "pass", or "fail: " and every unmet \
                requirement (length, a required line without a character of its own, characters not \
                allowed, runs of repeated or sequential characters). Passwords are never echoed. \
                Reads passwords from standard input, one per line, when none are given. Exits with \
                status 1 when any password fails.
                """
        )

        @Option(name: .long, help: ArgumentHelp("The password rules.", valueName: "rules"))
        var rules: String

        @Flag(name: .long, help: "Print one JSON object per password.")
        var json = false

        @Argument(help: ArgumentHelp("Passwords to check (standard input when none).", valueName: "password"))
        var passwords: [String] = []

        struct Line: Encodable {
            var valid: Bool
            var failures: [String]
        }

        func run() throws {
            let parsed = PasswordRules.parse(rules)
            for diagnostic in parsed.diagnostics(atLeast: .warning) {
                Output.error("keyhaven: warning: rules: \(diagnostic)")
            }
            let requirements = PasswordRequirements(parsed.rules)
            var anyFailed = false
            let input: AnySequence<String> = passwords.isEmpty ? Output.standardInputLines() : AnySequence(passwords)
            for password in input {
                let report = requirements.validate(password)
                anyFailed = anyFailed || !report.isValid
                if json {
                    print(
                        try Output.jsonLine(Line(valid: report.isValid, failures: report.failures.map(\.description)))
                    )
                } else {
                    print(report.isValid ? "pass" : "fail: \(report)")
                }
            }
            if anyFailed {
                throw ExitCode(1)
            }
        }
    }

    struct Lookup: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the password rules Apple publishes for a domain.",
            discussion: """
                Uses Apple's password-manager-resources quirks (shipped with Keyhaven): an entry \
                matches its domain and every subdomain unless it is marked exact-domain-match-only. \
                Prints the rule, or "none" when the domain has no entry.
                """
        )

        @Argument(help: ArgumentHelp("A domain or URL.", valueName: "domain"))
        var domain: String

        @Flag(name: .long, help: "Print a JSON object.")
        var json = false

        struct Report: Encodable {
            var query: String
            var domain: String?
            var rules: String?
            var canonical: String?
            var exactDomainMatchOnly: Bool?
        }

        func run() throws {
            let entry = PasswordRulesQuirks.shared.rules(forDomain: domain)
            if json {
                print(
                    try Output.jsonLine(
                        Report(
                            query: domain,
                            domain: entry?.domain,
                            rules: entry?.ruleText,
                            canonical: entry.map { PasswordRules.canonical($0.ruleText) },
                            exactDomainMatchOnly: entry?.exactDomainMatchOnly
                        )
                    )
                )
            } else if let entry {
                print(entry.ruleText)
                if entry.domain != PasswordRulesQuirks.normalize(domain) {
                    Output.error("keyhaven: note: matched the entry for \(entry.domain)")
                }
            } else {
                print("none")
                Output.error("keyhaven: note: no published password rules for \(domain)")
            }
        }
    }
}
