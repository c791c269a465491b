import Benchmark
import Foundation
import Vault

/// A 10,000-credential vault: importing a Chrome-format export of 10,000 rows into a fresh vault
/// (parse, seal, index, one transaction), unlocking it with Keyhaven's default key derivation
/// (scrypt N=2^17, r=8, p=1 — the floor; `init` may calibrate higher), and listing everything
/// (decrypting 10,000 records).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .peakMemoryResident],
        maxDuration: .seconds(20),
        maxIterations: 10
    )
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keyhaven-bench-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    var csv = "name,url,username,password,note\n"
    for index in 0..<10_000 {
        csv += "site\(index).example,https://login.site\(index).example/auth,user\(index)@mail.example,"
        csv += "pw-\(index)-\(UUID().uuidString.prefix(12)),\(index % 7 == 0 ? "\"note, \(index)\"" : "")\n"
    }
    let bytes = Array(csv.utf8)
    let password = "benchmark master password"
    let kdf = KDFParameters.random(logN: KDFParameters.minimumLogN)

    Benchmark("Import 10,000 credentials (Chrome CSV) into a new vault") { benchmark in
        for _ in benchmark.scaledIterations {
            let url = folder.appendingPathComponent("import-\(UUID().uuidString).sqlite")
            let vault = try Vault.create(
                at: url,
                masterPassword: password,
                kdf: .random(logN: 10),
                allowInsecureKDF: true
            )
            benchmark.startMeasurement()
            let report = try vault.importItems(ImportParser.parse(bytes))
            benchmark.stopMeasurement()
            precondition(report.imported == 10_000)
            try vault.close()
        }
    }

    let url = folder.appendingPathComponent("unlock.sqlite")
    if let vault = try? Vault.create(at: url, masterPassword: password, kdf: kdf) {
        _ = try? vault.importItems(ImportParser.parse(bytes))
        try? vault.close()
    }

    Benchmark("Unlock a 10,000-credential vault (scrypt N=2^17)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try Vault.open(at: url, masterPassword: password))
        }
    }

    Benchmark("List (decrypt) 10,000 credentials") { benchmark in
        let vault = try Vault.open(at: url, masterPassword: password)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try vault.list())
        }
    }
}
