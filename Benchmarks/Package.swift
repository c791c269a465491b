// swift-tools-version:6.1
//
// Keyhaven benchmarks (ordo-one/benchmark). Run from this directory:
//   swift package benchmark                      # all
//   swift package benchmark --filter Generation  # one group
// Peer comparisons (other tools measured in the same run) are scripts in ./scripts.

import Foundation
import PackageDescription

/// SwiftPM names a path dependency after its folder, so the main package's identity is whatever the
/// checkout folder is called.
let keyhaven = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "keyhaven-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        // The same jwt-kit as the main package (JOSEBenchmarks compares its signer with ours).
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        // The same swift-crypto as the main package (the passkey benchmark pairs like a browser).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        .executableTarget(
            name: "PasswordRulesBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "PasswordRules", package: keyhaven),
            ],
            path: "Benchmarks/PasswordRulesBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "PasswordStrengthBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "PasswordStrength", package: keyhaven),
            ],
            path: "Benchmarks/PasswordStrengthBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "AutoFillBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                // AutoFill is app-internal: reached through the underscored `_KeyhavenInternals`.
                .product(name: "_KeyhavenInternals", package: keyhaven),
                .product(name: "Vault", package: keyhaven),
                .product(name: "Passkeys", package: keyhaven),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/AutoFillBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "VaultBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Vault", package: keyhaven),
            ],
            path: "Benchmarks/VaultBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "UpgradeBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Vault", package: keyhaven),
                // ShinyService, KeyhavenApp and UpgradeHTTP are app-internal: `_KeyhavenInternals`.
                .product(name: "_KeyhavenInternals", package: keyhaven),
                .product(name: "AccountModification", package: keyhaven),
            ],
            path: "Benchmarks/UpgradeBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "BreachPSIBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "BreachCheck", package: keyhaven),
                // BreachPSI is app-internal: `_KeyhavenInternals`.
                .product(name: "_KeyhavenInternals", package: keyhaven),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/BreachPSIBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "JOSEBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "KeyhavenJOSE", package: keyhaven),
                .product(name: "RelyingParty", package: keyhaven),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            path: "Benchmarks/JOSEBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
