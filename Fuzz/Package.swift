// swift-tools-version:6.2
//
// libFuzzer targets for Keyhaven's parsers. Kept out of the main package because a fuzz target has
// no `main` and only links with `-sanitize=fuzzer`. Run them with scripts/fuzz.sh.

import Foundation
import PackageDescription

/// SwiftPM names a path dependency after its folder, so the main package's identity is whatever the
/// checkout folder is called.
let keyhaven = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

/// One libFuzzer target over one product of the main package.
func fuzzTarget(_ name: String, _ product: String) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["FuzzDriver", .product(name: product, package: keyhaven)],
        swiftSettings: [.swiftLanguageMode(.v6)]
    )
}

let package = Package(
    name: "keyhaven-fuzz",
    dependencies: [
        .package(path: "..")
    ],
    targets: [
        // libFuzzer's driver and the seed export, shared by every target's `main.swift`.
        .target(name: "FuzzDriver", swiftSettings: [.swiftLanguageMode(.v6)]),
        fuzzTarget("FuzzPasswordRules", "PasswordRules"),
        fuzzTarget("FuzzPasswordStrength", "PasswordStrength"),
        // JWS and JWK parsing (id_tokens, client secrets, key sets).
        fuzzTarget("FuzzJOSE", "KeyhavenJOSE"),
        // Every import format (`ImportParser.parse`) and the export round trip.
        fuzzTarget("FuzzImport", "Vault"),
        // The range API's response body and prefixes.
        fuzzTarget("FuzzRangeBody", "BreachCheck"),
        // Breach index files (crafted headers and tables).
        fuzzTarget("FuzzBreachIndex", "BreachCheck"),
        // The account-modification manifest and its resolution on an origin.
        fuzzTarget("FuzzManifest", "AccountModification"),
        // Form bodies and service origins live in the internal `_KeyhavenSupport`, which is no
        // product: it is reached through a product that depends on it (and is imported directly).
        fuzzTarget("FuzzFormBody", "AccountModification"),
        fuzzTarget("FuzzServiceOrigin", "AccountModification"),
        // The web app's upload bodies (multipart/form-data).
        fuzzTarget("FuzzMultipart", "AccountModification"),
        // CBOR as passkeys carry it (attestation objects, COSE keys).
        fuzzTarget("FuzzCBOR", "Passkeys"),
        // Registrations: authenticator data and attestation objects through PasskeyRelyingParty.
        fuzzTarget("FuzzAttestation", "Passkeys"),
    ]
)
