import Benchmark
import BreachCheck
import BreachPSI
import Crypto
import Foundation

/// The breach-PSI server's cost per query (issue 29): one blind evaluation with its DLEQ proof
/// (`BreachPSIServer.answer`, what `keyhaven breach psi serve` runs per request, bucket read from
/// memory) beside swift-crypto's raw P-384 scalar multiplication (an ECDH key agreement: one
/// variable-base multiplication and a point check) in the same run, and the ratio of the two
/// rates, printed. Goal: evaluations/s at least 80 % of scalar multiplications/s. One core: each
/// benchmark runs on one thread.
///
/// Also the bytes of an answer: 168 + 8 × entries of the bucket; the corpus here is small (the
/// answer's size at the Pwned Passwords scale is in docs/breach-psi.md).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput],
        timeUnits: .microseconds,
        warmupIterations: 20,
        maxDuration: .seconds(5),
        maxIterations: 5_000
    )

    var generator = SystemRandomNumberGenerator()
    let key = BreachPSIServerKey(using: &generator)
    var builder = BreachPSIBucketBuilder(key: key)
    try! builder.add(contentsOf: (0..<2_048).map { SHA1Digest(password: "leaked-\($0)") })
    let server = BreachPSIServer(key: key, buckets: builder.finish())
    let client = BreachPSIClient(publicKey: key.publicKey)
    // 256 blinded requests, made once: the client's work is not the server's.
    let requests = (0..<256).map { try! client.query(SHA1Digest(password: "held-\($0)")).request.encoded }
    let ours = P384.KeyAgreement.PrivateKey()
    let peers = (0..<256).map { _ in P384.KeyAgreement.PrivateKey().publicKey }

    Benchmark("P-384 scalar multiplication (swift-crypto ECDH, raw)") { benchmark in
        for index in benchmark.scaledIterations {
            blackHole(try ours.sharedSecretFromKeyAgreement(with: peers[index & 255]))
        }
    }

    Benchmark(
        "Blind evaluation with DLEQ proof (BreachPSIServer.answer)",
        configuration: .init(metrics: [.wallClock, .throughput, .custom("answer bytes", polarity: .prefersSmaller)])
    ) { benchmark in
        var bytes = 0
        for index in benchmark.scaledIterations {
            let answer = try server.answer(encoded: requests[index & 255])
            bytes += answer.count
            blackHole(answer)
        }
        benchmark.measurement(.custom("answer bytes"), bytes / max(benchmark.scaledIterations.count, 1))
    }

    // Both rates measured side by side, 400 of each in turns of 50, and their ratio printed: one
    // iteration and no warm-up, so one line (a warm-up's lines are printed too).
    Benchmark(
        "Evaluations per raw scalar multiplication (ratio printed)",
        configuration: .init(metrics: [.wallClock], warmupIterations: 0, maxIterations: 1)
    ) { _ in
        let clock = ContinuousClock()
        var evaluation = Duration.zero
        var multiplication = Duration.zero
        for round in 0..<8 {
            multiplication += try clock.measure {
                for index in 0..<50 {
                    blackHole(try ours.sharedSecretFromKeyAgreement(with: peers[(round * 50 + index) & 255]))
                }
            }
            evaluation += try clock.measure {
                for index in 0..<50 { blackHole(try server.answer(encoded: requests[(round * 50 + index) & 255])) }
            }
        }
        func perSecond(_ duration: Duration) -> Double {
            400 / (Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
        }
        let (evaluations, multiplications) = (perSecond(evaluation), perSecond(multiplication))
        print(
            String(
                format:
                    "breach-PSI: %.0f blind evaluations/s, %.0f raw P-384 scalar multiplications/s on one core: %.1f %% (goal >= 80 %%)",
                evaluations,
                multiplications,
                100 * evaluations / multiplications
            )
        )
    }
}
