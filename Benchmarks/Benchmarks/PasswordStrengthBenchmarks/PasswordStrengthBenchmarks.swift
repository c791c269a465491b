import Benchmark
import PasswordStrength

/// Strength estimation: a mixed set of realistic passwords, and the long-input cap.
/// The peer comparison (python zxcvbn, zxcvbn-rs-py) is Benchmarks/scripts/strength_peers.py.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        maxDuration: .seconds(5)
    )
    let estimator = StrengthEstimator.shared
    _ = estimator.estimate("warm up the dictionaries")

    let passwords = [
        "password", "P@ssw0rd", "qwertyuiop", "1qaz2wsx", "abc123", "Tr0ub4dour&3", "correcthorsebatterystaple",
        "xK9#mP2$vL7q", "hupvEw-fodne1-qabjyg", "jessica1987", "Summer2024!", "zxcvbnm,./", "11/12/1991",
        "aaaaaaaaaaaa", "abcabcabcabc", "Кириллица123", "ilovemydog", "th3qu1ckbr0wnf0x",
    ]
    // One iteration = every password above once.
    Benchmark("Estimate.Mixed (\(passwords.count) passwords per iteration)") { benchmark in
        for _ in benchmark.scaledIterations {
            for password in passwords {
                blackHole(estimator.estimate(password, userInputs: ["alice", "example"]))
            }
        }
    }

    let long = String(repeating: "k3yh4v3n-", count: 11_112)
    var rng = SystemRandomNumberGenerator()
    let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
    let random = String((0..<100_000).map { _ in alphabet.randomElement(using: &rng)! })
    Benchmark("Estimate.100k characters (repeated and random)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(estimator.estimate(long))
            blackHole(estimator.estimate(random))
        }
    }
}
