import Benchmark
import PasswordRules

/// Generation throughput: Apple's format, and one password for each of Apple's 434 quirk rules.
/// Parsing throughput: all 434 quirk rules.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .instructions, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(5)
    )

    let appleFormat = PasswordGenerator()
    Benchmark("Generation.AppleFormat") { benchmark in
        var rng = SystemRandomNumberGenerator()
        for _ in benchmark.scaledIterations {
            blackHole(try appleFormat.generate(using: &rng))
        }
    }

    let quirks = PasswordRulesQuirks.shared.entries.values.sorted { $0.domain < $1.domain }
    let generators = quirks.compactMap { try? PasswordGenerator(rules: $0.rules) }
    precondition(generators.count == quirks.count, "every quirk rule must be satisfiable")

    // One iteration = one password for every quirk rule (434 passwords).
    Benchmark("Generation.QuirkRules (434 passwords per iteration)", configuration: .init(scalingFactor: .one)) {
        benchmark in
        var rng = SystemRandomNumberGenerator()
        for _ in benchmark.scaledIterations {
            for generator in generators {
                blackHole(try generator.generate(using: &rng))
            }
        }
    }

    let ruleTexts = quirks.map(\.ruleText)
    Benchmark("Parse.QuirkRules (434 rules per iteration)", configuration: .init(scalingFactor: .one)) { benchmark in
        for _ in benchmark.scaledIterations {
            for text in ruleTexts {
                blackHole(PasswordRules.parse(text, view: .display))
            }
        }
    }
}
