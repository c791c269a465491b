import AccountModification
import Benchmark
import Foundation
import KeyhavenApp
import ShinyService
import UpgradeHTTP
import Vault

/// A no-interaction upgrade end to end against a local shiny over HTTP: manifest, password
/// generation, journal (synced), the protocol, shiny verifying and hashing (scrypt N=2^13), the vault
/// update. Goal: p50 ≤ 50 ms.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock], maxDuration: .seconds(15), maxIterations: 200)

    struct Host: ModificationHost {
        func presentInterface(_ url: String) async {}
        func obtainSignInAuthorization(_ request: SignInRequest) async -> SignInAuthorization { .init(error: "none") }
    }

    Benchmark("Upgrade to a strong password, no interaction (local shiny over HTTP)") { benchmark in
        let shiny = try Shiny()
        let (origin, server) = try await shiny.start()
        defer { server.cancel() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keyhaven-upgrade-bench-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let vault = try Vault.create(
            at: folder.appendingPathComponent("v.sqlite"),
            masterPassword: "bench",
            kdf: .random(logN: 10),
            allowInsecureKDF: true
        )
        let count = benchmark.scaledIterations.count
        var ids: [CredentialID] = []
        for index in 0..<count {
            try shiny.createAccount(user: "user\(index)", password: "Password\(1000 + index)x")
            ids.append(
                try vault.add(
                    CredentialContent(
                        services: [.init(origin)],
                        user: "user\(index)",
                        password: "Password\(1000 + index)x"
                    )
                )
            )
        }
        let coordinator = UpgradeService(vault: vault, environment: HTTPUpgradeEnvironment(), host: Host())
        // Warm the connection pool.
        _ = await HTTPWellKnownProbe().get(origin + "/")
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            let result = await coordinator.upgradeToStrongPassword(ids[index], service: origin)
            guard case .upgraded = result else { fatalError("upgrade failed: \(result)") }
        }
        benchmark.stopMeasurement()
    }
}
