// swift-tools-version:6.2
//
// Keyhaven: open, self-hostable account security (password audit, one-tap upgrades,
// Sign in with Keyhaven). See README.md and docs/.

import PackageDescription

/// One set of Swift settings for every target, tests included (see README "Code style").
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatAllWarnings(as: .error),
]

// MARK: - Dependencies

let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
let grdb: Target.Dependency = .product(name: "GRDB", package: "GRDB.swift")
let crypto: Target.Dependency = .product(name: "Crypto", package: "swift-crypto")
let cryptoExtras: Target.Dependency = .product(name: "_CryptoExtras", package: "swift-crypto")

// MARK: - Targets

let package = Package(
    name: "keyhaven",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "keyhaven", targets: ["keyhaven"]),
        .library(name: "PasswordRules", targets: ["PasswordRules"]),
        .library(name: "PasswordStrength", targets: ["PasswordStrength"]),
        .library(name: "Vault", targets: ["Vault"]),
        .library(name: "KeyhavenTesting", targets: ["KeyhavenTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        // Apple's password-rules language: parse, canonicalize, validate, generate; quirks data.
        .target(
            name: "PasswordRules",
            exclude: ["Resources"],
            swiftSettings: swiftSettings
        ),
        // zxcvbn-exact strength estimation; frequency lists and keyboard graphs compiled in.
        .target(
            name: "PasswordStrength",
            exclude: ["Resources"],
            swiftSettings: swiftSettings
        ),
        // The encrypted credential store (the Keychain of Keyhaven): GRDB + swift-crypto; import/export.
        .target(
            name: "Vault",
            dependencies: [grdb, crypto, cryptoExtras],
            swiftSettings: swiftSettings
        ),
        // Test support shipped to users: seeded randomness, fixed clocks, fixtures.
        .target(
            name: "KeyhavenTesting",
            dependencies: ["Vault"],
            swiftSettings: swiftSettings
        ),
        // The commands of `keyhaven`, as a library so tests can drive them in-process.
        .target(
            name: "KeyhavenCLI",
            dependencies: [
                "PasswordRules",
                "PasswordStrength",
                "Vault",
                argumentParser,
            ],
            swiftSettings: swiftSettings
        ),
        // The `keyhaven` executable: only `main.swift`.
        .executableTarget(
            name: "keyhaven",
            dependencies: ["KeyhavenCLI", argumentParser],
            swiftSettings: swiftSettings
        ),

        // MARK: - Tests
        .testTarget(
            name: "PasswordRulesTests",
            dependencies: ["PasswordRules", "KeyhavenTesting"],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PasswordStrengthTests",
            dependencies: ["PasswordStrength", "KeyhavenTesting"],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "VaultTests",
            dependencies: ["Vault", "KeyhavenTesting", grdb],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KeyhavenCLITests",
            dependencies: ["KeyhavenCLI", "KeyhavenTesting", "keyhaven", "PasswordRules", "Vault"],
            swiftSettings: swiftSettings
        ),
    ]
)
