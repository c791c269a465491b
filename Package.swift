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
let hummingbird: Target.Dependency = .product(name: "Hummingbird", package: "hummingbird")
let hummingbirdTesting: Target.Dependency = .product(name: "HummingbirdTesting", package: "hummingbird")
let asyncHTTPClient: Target.Dependency = .product(name: "AsyncHTTPClient", package: "async-http-client")
let serviceLifecycle: Target.Dependency = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let httpTypes: Target.Dependency = .product(name: "HTTPTypes", package: "swift-http-types")
let postgresNIO: Target.Dependency = .product(name: "PostgresNIO", package: "postgres-nio")
let jwtKit: Target.Dependency = .product(name: "JWTKit", package: "jwt-kit")
let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let nioHTTP1: Target.Dependency = .product(name: "NIOHTTP1", package: "swift-nio")
let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
let nioFoundationCompat: Target.Dependency = .product(name: "NIOFoundationCompat", package: "swift-nio")
let unixSignals: Target.Dependency = .product(name: "UnixSignals", package: "swift-service-lifecycle")

// MARK: - Targets

let package = Package(
    name: "keyhaven",
    platforms: [.macOS(.v15)],
    // Products are the kits people embed (their public API is promised under SemVer); every other
    // target is internal to the package. README "Architecture" is generated from this file
    // (scripts/architecture.py).
    products: [
        .executable(name: "keyhaven", targets: ["keyhaven"]),
        .executable(name: "shiny", targets: ["shiny"]),
        .library(name: "PasswordRules", targets: ["PasswordRules"]),
        .library(name: "PasswordStrength", targets: ["PasswordStrength"]),
        .library(name: "BreachCheck", targets: ["BreachCheck"]),
        .library(name: "Vault", targets: ["Vault"]),
        .library(name: "AccountModification", targets: ["AccountModification"]),
        .library(name: "AccountModificationKit", targets: ["AccountModificationKit"]),
        .library(name: "RelyingParty", targets: ["RelyingParty"]),
        .library(name: "Passkeys", targets: ["Passkeys"]),
        .library(name: "IdentityProvider", targets: ["IdentityProvider"]),
        .library(name: "IdentityProviderServer", targets: ["IdentityProviderServer"]),
        .library(name: "IdentityProviderPostgres", targets: ["IdentityProviderPostgres"]),
        // Its types (JOSEError, signing keys, verified claims) are part of RelyingParty's and
        // IdentityProvider's API, so their users may import it.
        .library(name: "KeyhavenJOSE", targets: ["KeyhavenJOSE"]),
        .library(name: "KeyhavenTesting", targets: ["KeyhavenTesting"]),
        // Not API (underscored, as swift-nio's docs/public-api.md): app-internal targets that this
        // repository's Benchmarks/ package measures. A package can depend only on another's
        // products, so they are offered here under a name that promises nothing.
        .library(
            name: "_KeyhavenInternals",
            targets: ["AutoFill", "KeyhavenApp", "UpgradeHTTP", "ShinyService", "BreachPSI"]
        ),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // The relying-party kit's token verification; tests also use its AppleIdentityToken.
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
    ],
    targets: [
        // Internal helpers every other target shares (not a product; its API is not promised to
        // anyone): the one error shape (KeyhavenError), ServiceOrigin with the Public Suffix List and
        // Apple's shared-credential groups, constant-time compare, base64url and hex, form encoding, a
        // small JSON writer, HTML that escapes by default.
        .target(
            name: "_KeyhavenSupport",
            exclude: ["Resources"],
            swiftSettings: swiftSettings
        ),
        // Apple's password-rules language: parse, canonicalize, validate, generate; quirks data.
        .target(
            name: "PasswordRules",
            dependencies: ["_KeyhavenSupport"],
            exclude: ["Resources"],
            swiftSettings: swiftSettings
        ),
        // zxcvbn-exact strength estimation; frequency lists and keyboard graphs compiled in.
        .target(
            name: "PasswordStrength",
            exclude: ["Resources"],
            swiftSettings: swiftSettings
        ),
        // Pwned Passwords: SHA-1 k-anonymity client logic, offline index (build + mapped lookup), ranges.
        .target(
            name: "BreachCheck",
            dependencies: ["_KeyhavenSupport", crypto],
            swiftSettings: swiftSettings
        ),
        // Private breach checks (docs/breach-psi.md): leaked SHA-1s as VOPRF(P-384) outputs in 2^15
        // buckets, the fixed-size wire format, the client's verification and the server's answer;
        // no HTTP.
        .target(
            name: "BreachPSI",
            dependencies: ["_KeyhavenSupport", "BreachCheck", crypto, cryptoExtras],
            swiftSettings: swiftSettings
        ),
        // The one factory of outgoing HTTP clients (internal; AsyncHTTPClient).
        .target(
            name: "_KeyhavenHTTPSupport",
            dependencies: [asyncHTTPClient, nioCore, nioPosix],
            swiftSettings: swiftSettings
        ),
        // The web toolkit the three servers share (internal): security headers as middleware, HTML,
        // JSON and redirect responses, the strict form decoder, CSRF tokens, assets.
        .target(
            name: "_KeyhavenWeb",
            dependencies: ["_KeyhavenSupport", hummingbird, httpTypes, logging, nioCore],
            swiftSettings: swiftSettings
        ),
        // Breach checks over HTTP: the range API client's transport and the range server; the
        // breach-PSI server and its client's transport.
        .target(
            name: "BreachCheckHTTP",
            dependencies: [
                "_KeyhavenSupport", "_KeyhavenHTTPSupport", "_KeyhavenWeb", "BreachCheck", "BreachPSI", hummingbird,
                asyncHTTPClient, logging, httpTypes, nioCore, nioHTTP1,
            ],
            swiftSettings: swiftSettings
        ),
        // Upgrades over HTTP: manifests, the account-modification protocol, change-password probes,
        // and the loopback API apps use for in-app requests.
        .target(
            name: "UpgradeHTTP",
            dependencies: [
                "_KeyhavenSupport", "_KeyhavenHTTPSupport", "AccountModification", "AccountModificationKit",
                "KeyhavenApp", "SecurityRecommendations", hummingbird, asyncHTTPClient, logging, httpTypes, crypto,
                nioCore,
                nioHTTP1, nioPosix,
            ],
            swiftSettings: swiftSettings
        ),
        // The identity provider over HTTP: Sign in with Apple's endpoints, pages, Keyhaven's device
        // API, the notification sender. What an operator runs: it links no part of the password
        // manager (scripts/architecture.py checks it).
        .target(
            name: "IdentityProviderServer",
            dependencies: [
                "_KeyhavenSupport", "_KeyhavenWeb", "_KeyhavenHTTPSupport", "IdentityProvider", "KeyhavenJOSE",
                "OneTimeCodes", hummingbird, asyncHTTPClient, serviceLifecycle, logging, httpTypes, nioCore, nioHTTP1,
                unixSignals, crypto,
            ],
            // The pages' browser scripts: .js files, compiled in by SwiftPM (no bundle at run time).
            resources: [.embedInCode("Resources/handoff.js")],
            swiftSettings: swiftSettings
        ),
        // The password manager's side of Sign in with Keyhaven: the client of a provider's device
        // API (sign in, consent, authorize, connected services) and the upgrade's sign-in authority.
        .target(
            name: "IdentityProviderClient",
            dependencies: [
                "_KeyhavenSupport", "_KeyhavenHTTPSupport", "IdentityProvider", "KeyhavenJOSE", "KeyhavenApp",
                "AccountModification", "Vault", asyncHTTPClient, nioCore, nioHTTP1,
            ],
            swiftSettings: swiftSettings
        ),
        // Security Recommendations: breached, reused, weak, unsecured; change-password discovery.
        .target(
            name: "SecurityRecommendations",
            dependencies: ["_KeyhavenSupport", "Vault", "PasswordStrength", "BreachCheck", "BreachPSI"],
            exclude: ["Resources"],
            swiftSettings: swiftSettings
        ),
        // The account-modification protocol: messages, manifest, host-side flow (no I/O).
        .target(
            name: "AccountModification",
            dependencies: ["_KeyhavenSupport"],
            swiftSettings: swiftSettings
        ),
        // The service kit: a service implements AccountModificationExtension; the kit serves it.
        .target(
            name: "AccountModificationKit",
            dependencies: ["AccountModification", "_KeyhavenSupport", hummingbird, httpTypes, nioCore],
            swiftSettings: swiftSettings
        ),
        // Sign-in factors: RFC 6238 one-time codes, base32, scrypt password hashes.
        .target(
            name: "OneTimeCodes",
            dependencies: ["_KeyhavenSupport", crypto, cryptoExtras],
            swiftSettings: swiftSettings
        ),
        // shiny, the example service (a library, so tests can run it in-process; `keyhaven demo` runs
        // the `shiny` executable as a process of its own).
        .target(
            name: "ShinyService",
            dependencies: [
                "_KeyhavenSupport", "_KeyhavenWeb", "AccountModification", "AccountModificationKit", "OneTimeCodes",
                "PasswordRules",
                "RelyingParty", "KeyhavenJOSE", "Passkeys", hummingbird, httpTypes, nioCore,
                grdb, crypto, cryptoExtras, logging,
            ],
            // The pages' browser scripts: .js files, compiled in by SwiftPM (no bundle at run time).
            resources: [.embedInCode("Resources/shiny-passkeys.js")],
            swiftSettings: swiftSettings
        ),
        // The `shiny` executable: runs the example service (`keyhaven demo` and the tests start it).
        .executableTarget(
            name: "shiny",
            dependencies: ["ShinyService", argumentParser],
            swiftSettings: swiftSettings
        ),
        // The use-case layer between the front ends and the domain: KeyhavenSession (the one owner of
        // the unlocked vault, on its own executor: the one rule for blocking work), upgrades through
        // one journal-first pipeline with explicit reconciliation, the audit (its upgrade offers from
        // the same manifest reader), imports. Time and randomness are injected.
        .target(
            name: "KeyhavenApp",
            dependencies: [
                "_KeyhavenSupport", "AccountModification", "Vault", "PasswordRules", "SecurityRecommendations",
                "Passkeys",
            ],
            swiftSettings: swiftSettings
        ),
        // JWS/JWK (RS256, ES256) and Sign in with Apple's wire types; strict, no `none`, no HS256.
        .target(
            name: "KeyhavenJOSE",
            dependencies: ["_KeyhavenSupport", crypto, cryptoExtras],
            swiftSettings: swiftSettings
        ),
        // Sign in with Keyhaven: the identity provider's logic and storage (no HTTP framework).
        .target(
            name: "IdentityProvider",
            dependencies: [
                "_KeyhavenSupport", "_KeyhavenSQLite", "KeyhavenJOSE", "OneTimeCodes", crypto, grdb, nioCore, nioPosix,
            ],
            swiftSettings: swiftSettings
        ),
        // How Keyhaven opens its SQLite files, in one place (internal): created private, WAL,
        // synchronous commits, secure delete, a busy timeout (the vault, the provider, the sync server).
        .target(
            name: "_KeyhavenSQLite",
            dependencies: ["_KeyhavenSupport", grdb],
            swiftSettings: swiftSettings
        ),
        // The one reading of a postgres:// URL (TLS required off loopback) for the provider's and the
        // sync server's PostgreSQL storage (internal).
        .target(
            name: "_KeyhavenPostgres",
            dependencies: ["_KeyhavenSupport", postgresNIO, serviceLifecycle, logging],
            swiftSettings: swiftSettings
        ),
        // The provider's PostgreSQL storage (postgres-nio), behind the same SQL seam as SQLite.
        .target(
            name: "IdentityProviderPostgres",
            dependencies: ["IdentityProvider", "_KeyhavenPostgres", postgresNIO, logging, serviceLifecycle, nioCore],
            swiftSettings: swiftSettings
        ),
        // The relying-party kit: verify identity tokens and notifications (jwt-kit), client secrets,
        // token calls.
        .target(
            name: "RelyingParty",
            dependencies: [
                "_KeyhavenSupport", "_KeyhavenHTTPSupport", "KeyhavenJOSE", asyncHTTPClient, crypto, jwtKit, nioCore,
                nioHTTP1,
            ],
            swiftSettings: swiftSettings
        ),
        // AutoFill's provider (docs/autofill-protocol.md): identities, matching and fill policy,
        // pairing and session crypto, the agent's state; no sockets, threads or HTTP.
        .target(
            name: "AutoFill",
            dependencies: [
                "KeyhavenApp", "Vault", "PasswordRules", "OneTimeCodes", "Passkeys", "_KeyhavenSupport", crypto,
            ],
            swiftSettings: swiftSettings
        ),
        // `keyhaven agent`'s process: the Unix socket on SwiftNIO (peer uid checked), every task on
        // the session's executor, browser sessions and the CLI's requests.
        .target(
            name: "KeyhavenAgent",
            dependencies: [
                "AutoFill", "KeyhavenApp", "KeyhavenSync", "Vault", "_KeyhavenSupport", nioCore, nioPosix,
                nioFoundationCompat,
            ],
            swiftSettings: swiftSettings
        ),
        // Passkeys (WebAuthn) without HTTP: CBOR, COSE keys, authenticator data, attestation `none`,
        // the authenticator the agent runs, and the relying-party kit services mount
        // (PasskeyRelyingParty).
        .target(
            name: "Passkeys",
            dependencies: ["_KeyhavenSupport", crypto],
            swiftSettings: swiftSettings
        ),
        // `keyhaven ui`: the local web app the agent serves on loopback (pages, /api, its security).
        .target(
            name: "KeyhavenWebApp",
            dependencies: [
                "_KeyhavenSupport", "_KeyhavenWeb", "AutoFill", "KeyhavenApp", "Vault", "SecurityRecommendations",
                "AccountModification", "PasswordRules", "PasswordStrength", "OneTimeCodes", "Passkeys", hummingbird,
                httpTypes, logging, nioCore, nioPosix, crypto,
            ],
            // The pages' browser scripts: .js files, compiled in by SwiftPM (no bundle at run time).
            resources: [.embedInCode("Resources/app.js")],
            swiftSettings: swiftSettings
        ),
        // Sync's core, free of HTTP and SQLite: hybrid logical clocks, items as fields stamped with
        // their last write, the three-way per-field merge (a union: replicas converge byte for
        // byte), tombstones where an unseen edit wins, the outbox of idempotent mutations, the
        // in-memory reference server (compare-and-swap on revisions) the real one must match, and
        // item sealing (per-item keys under the vault key, overview and details apart, padded).
        .target(
            name: "VaultSync",
            dependencies: ["_KeyhavenSupport", crypto],
            swiftSettings: swiftSettings
        ),
        // The vault's credentials as sync records and back (docs/sync.md): every content field, the
        // password history with its dates, one field per passkey, deletion as a tombstone, canonical
        // values, typed errors for what it cannot read; the sealed payloads a server stores.
        .target(
            name: "VaultSyncBridge",
            dependencies: ["_KeyhavenSupport", "Vault", "VaultSync", "Passkeys", crypto],
            swiftSettings: swiftSettings
        ),
        // The sync server's domain and storage, free of HTTP (docs/sync.md): accounts and devices
        // (each device's own Ed25519 key; signed challenges, short-lived bearer tokens stored as
        // hashes; a new device only with an enrolled one's approval), compare-and-swap pushes and
        // delta changes that answer as VaultSync's reference server, SQLite (GRDB, WAL) on a thread
        // of its own, wake-ups for long polls. It stores ciphertext it cannot read.
        .target(
            name: "SyncServer",
            dependencies: ["_KeyhavenSupport", "_KeyhavenSQLite", "VaultSync", grdb, crypto],
            swiftSettings: swiftSettings
        ),
        // The sync server's PostgreSQL storage (postgres-nio), behind the same SyncStore protocol as
        // SQLite: several instances on one database.
        .target(
            name: "SyncServerPostgres",
            dependencies: [
                "_KeyhavenSupport", "_KeyhavenPostgres", "SyncServer", "VaultSync", postgresNIO, logging,
                serviceLifecycle, nioCore,
            ],
            swiftSettings: swiftSettings
        ),
        // A device's side of sync over HTTP (docs/sync.md): the typed client of every endpoint of
        // docs/openapi/sync.yaml (its own Ed25519 key, signed challenges, tokens refreshed by an
        // injected clock, short deadlines), and SyncSession, which runs a SyncReplica against a
        // server (pull, push until the outbox is empty, long polls). Links no part of the vault.
        .target(
            name: "SyncClient",
            dependencies: [
                "_KeyhavenSupport", "_KeyhavenHTTPSupport", "VaultSync", asyncHTTPClient, nioCore, nioHTTP1, crypto,
            ],
            swiftSettings: swiftSettings
        ),
        // The device side of sync on the session (docs/sync.md "On the device"): `enableSync`,
        // `syncNow` and `syncStatus` as methods of KeyhavenSession, the device's state sealed in the
        // vault, the vault's edits into the replica and merged records back through the vault's writes;
        // conflicts listed and resolved; the agent's background sync (long polls, backing off).
        .target(
            name: "KeyhavenSync",
            dependencies: [
                "_KeyhavenSupport", "KeyhavenApp", "Vault", "VaultSync", "VaultSyncBridge", "SyncClient", "Passkeys",
                crypto,
            ],
            swiftSettings: swiftSettings
        ),
        // `keyhaven sync serve` over HTTP (Hummingbird): the JSON API of docs/openapi/sync.yaml.
        .target(
            name: "SyncServerHTTP",
            dependencies: [
                "_KeyhavenSupport", "_KeyhavenWeb", "SyncServer", "VaultSync", hummingbird, httpTypes, logging,
                nioCore, serviceLifecycle, unixSignals,
            ],
            swiftSettings: swiftSettings
        ),
        // The encrypted credential store (the Keychain of Keyhaven): GRDB + swift-crypto; import/export.
        .target(
            name: "Vault",
            dependencies: ["_KeyhavenSupport", "_KeyhavenSQLite", "Passkeys", grdb, crypto, cryptoExtras],
            swiftSettings: swiftSettings
        ),
        // Test support shipped to users: seeded randomness, fixed clocks, fixtures, a command runner,
        // external-tool gates, generated breach corpora.
        .target(
            name: "KeyhavenTesting",
            dependencies: ["Vault", "BreachCheck", "_KeyhavenSupport"],
            swiftSettings: swiftSettings
        ),
        // The commands of `keyhaven`, as a library so tests can drive them in-process.
        .target(
            name: "KeyhavenCLI",
            dependencies: [
                "_KeyhavenSupport",
                "PasswordRules",
                "PasswordStrength",
                "Vault",
                "BreachCheck",
                "BreachPSI",
                "SecurityRecommendations",
                "BreachCheckHTTP", "UpgradeHTTP", "IdentityProviderServer", "IdentityProviderClient",
                "KeyhavenApp",
                "AccountModification",
                "OneTimeCodes",
                "IdentityProvider",
                "IdentityProviderPostgres",
                "KeyhavenJOSE",
                "AutoFill", "KeyhavenAgent", "KeyhavenWebApp", "Passkeys", "SyncServer", "SyncServerHTTP",
                "SyncServerPostgres", "KeyhavenSync",
                // The demo's calls to shiny over HTTP.
                "_KeyhavenHTTPSupport", asyncHTTPClient, nioCore, nioHTTP1,
                argumentParser,
                logging,
                crypto,
            ],
            swiftSettings: swiftSettings
        ),
        // The `keyhaven` executable: only `main.swift`.
        .executableTarget(
            name: "keyhaven",
            dependencies: [
                "KeyhavenCLI", argumentParser, .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: - Tests
        // One test target per library target (`<Target>Tests`), plus suites that cross targets on
        // purpose (IdentityProviderTests: the provider end to end; KeyhavenCLITests: the binary).

        // The provider served on a loopback port with a team, a service and a person, for the
        // provider's test targets (not a product; test support users may want is in KeyhavenTesting).
        .target(
            name: "IdentityProviderTestSupport",
            dependencies: [
                "IdentityProvider", "IdentityProviderServer", "IdentityProviderPostgres", "KeyhavenJOSE",
                "RelyingParty",
                "_KeyhavenSupport", asyncHTTPClient, logging, nioCore, nioHTTP1,
            ],
            path: "Tests/IdentityProviderTestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "_KeyhavenSupportTests",
            dependencies: ["_KeyhavenSupport"],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
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
            name: "OneTimeCodesTests",
            dependencies: ["OneTimeCodes"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AutoFillTests",
            dependencies: [
                "AutoFill", "KeyhavenApp", "Vault", "Passkeys", "KeyhavenTesting", "_KeyhavenSupport", crypto,
            ],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KeyhavenAgentTests",
            dependencies: [
                "KeyhavenAgent", "KeyhavenSync", "AutoFill", "KeyhavenApp", "Vault", "KeyhavenTesting",
                "_KeyhavenSupport", crypto,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PasskeysTests",
            dependencies: ["Passkeys", "KeyhavenTesting", "_KeyhavenSupport", crypto],
            exclude: ["py_webauthn_check.py", "fido2_authenticator.py"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KeyhavenWebAppTests",
            dependencies: [
                "KeyhavenWebApp", "AutoFill", "KeyhavenApp", "Vault", "SecurityRecommendations", "AccountModification",
                "UpgradeHTTP",
                "Passkeys", "KeyhavenTesting", "_KeyhavenSupport", "_KeyhavenHTTPSupport", asyncHTTPClient, nioCore,
                nioHTTP1,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "VaultTests",
            dependencies: ["Vault", "Passkeys", "KeyhavenTesting", "_KeyhavenSupport", grdb, crypto],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "VaultSyncTests",
            dependencies: ["VaultSync", "KeyhavenTesting", "_KeyhavenSupport", crypto],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "VaultSyncBridgeTests",
            dependencies: ["VaultSyncBridge", "VaultSync", "Vault", "Passkeys", "KeyhavenTesting", crypto],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SyncClientTests",
            dependencies: [
                "SyncClient", "SyncServer", "SyncServerHTTP", "VaultSync", "VaultSyncBridge", "Vault",
                "KeyhavenTesting",
                "_KeyhavenSupport", "_KeyhavenHTTPSupport", crypto, hummingbird, hummingbirdTesting, httpTypes,
                nioCore,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KeyhavenSyncTests",
            dependencies: [
                "KeyhavenSync", "KeyhavenApp", "AutoFill", "KeyhavenWebApp", "AccountModification",
                "SecurityRecommendations", "SyncClient",
                "SyncServer", "SyncServerHTTP", "VaultSync", "VaultSyncBridge", "Vault", "KeyhavenTesting",
                "_KeyhavenSupport", crypto, grdb, hummingbird, hummingbirdTesting, httpTypes, nioCore,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SyncServerTests",
            dependencies: [
                "SyncServer", "SyncServerHTTP", "SyncServerPostgres", "VaultSync", "KeyhavenTesting",
                "_KeyhavenSupport",
                crypto, grdb,
                hummingbird, hummingbirdTesting, httpTypes, nioCore,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BreachCheckTests",
            dependencies: ["BreachCheck", "KeyhavenTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BreachPSITests",
            dependencies: ["BreachPSI", "BreachCheck", "KeyhavenTesting", "_KeyhavenSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SecurityRecommendationsTests",
            dependencies: [
                "SecurityRecommendations", "KeyhavenTesting", "Vault", "BreachCheck", "BreachPSI", "PasswordStrength",
            ],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AccountModificationTests",
            dependencies: ["AccountModification", "_KeyhavenSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KeyhavenAppTests",
            dependencies: [
                "KeyhavenApp", "AccountModification", "ShinyService", "UpgradeHTTP", "KeyhavenTesting", "Vault",
                "OneTimeCodes", "PasswordRules", "Passkeys", "SecurityRecommendations", "_KeyhavenSupport",
                "_KeyhavenHTTPSupport", asyncHTTPClient,
                hummingbird, hummingbirdTesting, httpTypes, nioCore, nioHTTP1,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ShinyServiceTests",
            dependencies: [
                // The `shiny` executable too: its tests run it as a process.
                "ShinyService", "shiny", "AccountModification", "AccountModificationKit", "KeyhavenTesting",
                "OneTimeCodes", "PasswordRules", "Passkeys", "_KeyhavenSupport", hummingbird, hummingbirdTesting,
                httpTypes, nioCore, asyncHTTPClient, nioHTTP1, crypto,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IdentityProviderTests",
            dependencies: [
                "_KeyhavenSupport", "IdentityProvider", "IdentityProviderPostgres", "IdentityProviderServer",
                "IdentityProviderClient", "IdentityProviderTestSupport", "RelyingParty", "KeyhavenJOSE", "UpgradeHTTP",
                "KeyhavenTesting",
                "OneTimeCodes", "ShinyService", "KeyhavenApp", "Vault", "AccountModification", asyncHTTPClient, jwtKit,
                logging, crypto, nioCore, nioHTTP1,
            ],
            exclude: ["Clients", "Browser"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KeyhavenCLITests",
            dependencies: [
                "Passkeys",
                // Both executables: `keyhaven demo` runs the `shiny` built next to `keyhaven`.
                "KeyhavenCLI", "KeyhavenTesting", "keyhaven", "shiny", "PasswordRules", "Vault", "BreachCheck",
                "ShinyService",
                "OneTimeCodes", "AccountModification", "AutoFill", "KeyhavenAgent", "_KeyhavenSupport", argumentParser,
                grdb,
            ],
            exclude: ["Browser"],
            swiftSettings: swiftSettings
        ),
        // The toolkit, and the three servers' routes walked for its headers.
        .testTarget(
            name: "_KeyhavenWebTests",
            dependencies: [
                "_KeyhavenWeb", "_KeyhavenSupport", "ShinyService", "IdentityProviderServer", "IdentityProvider",
                "KeyhavenWebApp", "AutoFill", "KeyhavenApp", "AccountModification", "KeyhavenTesting", "Vault",
                "SecurityRecommendations", hummingbird, hummingbirdTesting, httpTypes, nioCore,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "_KeyhavenHTTPSupportTests",
            dependencies: [
                "_KeyhavenHTTPSupport", "KeyhavenTesting", asyncHTTPClient, hummingbird, hummingbirdTesting, httpTypes,
                nioCore, nioHTTP1,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KeyhavenTestingTests",
            dependencies: ["KeyhavenTesting", "Vault", "BreachCheck"],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "KeyhavenJOSETests",
            dependencies: ["KeyhavenJOSE", "KeyhavenTesting", "_KeyhavenSupport", crypto],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RelyingPartyTests",
            dependencies: [
                "RelyingParty", "IdentityProvider", "IdentityProviderTestSupport", "KeyhavenJOSE", "KeyhavenTesting",
                "_KeyhavenSupport", crypto, cryptoExtras,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IdentityProviderPostgresTests",
            dependencies: [
                "IdentityProviderPostgres", "IdentityProvider", "IdentityProviderServer", "IdentityProviderTestSupport",
                "KeyhavenJOSE", "KeyhavenTesting", "RelyingParty", crypto, logging,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IdentityProviderClientTests",
            dependencies: [
                "IdentityProviderClient", "IdentityProvider", "IdentityProviderTestSupport", "OneTimeCodes",
                asyncHTTPClient, hummingbird, httpTypes, logging, nioCore, nioHTTP1,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IdentityProviderServerTests",
            dependencies: [
                "IdentityProviderServer", "IdentityProvider", "IdentityProviderTestSupport", "KeyhavenJOSE",
                "KeyhavenTesting", "RelyingParty", "OneTimeCodes", "_KeyhavenSupport", asyncHTTPClient, hummingbird,
                httpTypes, logging, nioCore, nioHTTP1, nioPosix,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "BreachCheckHTTPTests",
            dependencies: [
                "BreachCheckHTTP", "BreachCheck", "BreachPSI", "KeyhavenTesting", "_KeyhavenSupport", hummingbird,
                hummingbirdTesting, httpTypes, nioCore,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "UpgradeHTTPTests",
            dependencies: [
                "UpgradeHTTP", "AccountModification", "KeyhavenApp", "KeyhavenTesting", "SecurityRecommendations",
                "Vault", "_KeyhavenSupport", asyncHTTPClient, hummingbird, hummingbirdTesting, httpTypes,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AccountModificationKitTests",
            dependencies: [
                "AccountModificationKit", "AccountModification", hummingbird, hummingbirdTesting, httpTypes, nioCore,
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
