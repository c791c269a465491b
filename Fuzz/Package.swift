// swift-tools-version:6.2
//
// libFuzzer targets for Keyhaven's parsers. Kept out of the main package because a fuzz target has
// no `main` and only links with `-sanitize=fuzzer`. Run them with scripts/fuzz.sh.

import Foundation
import PackageDescription

/// SwiftPM names a path dependency after its folder, so the main package's identity is whatever the
/// checkout folder is called.
let keyhaven = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "keyhaven-fuzz",
    dependencies: [
        .package(path: "..")
    ],
    targets: [
        .executableTarget(
            name: "FuzzPasswordRules",
            dependencies: [.product(name: "PasswordRules", package: keyhaven)],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "FuzzPasswordStrength",
            dependencies: [.product(name: "PasswordStrength", package: keyhaven)],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
