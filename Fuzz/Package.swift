// swift-tools-version:6.2
//
// libFuzzer targets for Keyhaven's parsers. Kept out of the main package because a fuzz target has
// no `main` and only links with `-sanitize=fuzzer`. Run them with scripts/fuzz.sh.

import PackageDescription

let package = Package(
    name: "keyhaven-fuzz",
    dependencies: [
        .package(path: "..")
    ],
    targets: [
        .executableTarget(
            name: "FuzzPasswordRules",
            dependencies: [.product(name: "PasswordRules", package: "main")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
