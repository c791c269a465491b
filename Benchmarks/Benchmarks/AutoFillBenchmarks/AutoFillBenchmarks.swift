import AutoFill
import Benchmark
import Foundation
import Vault

/// The agent's identity query (issue 14: p99 ≤ 1 ms over 100,000 credentials): the identities a
/// frame may be offered, with match tiers and ranks, from the in-memory index the agent builds at
/// unlock. The vault holds 100,000 credentials over 20,000 sites (five accounts each, some on
/// subdomains) plus Apple's shared-credential groups; each iteration asks for one page URL.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .peakMemoryResident],
        maxDuration: .seconds(10),
        maxIterations: 100_000
    )
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keyhaven-bench-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    var csv = "name,url,username,password,note\n"
    for index in 0..<100_000 {
        let site = index % 20_000
        let host = index % 3 == 0 ? "login.site\(site).example" : "site\(site).example"
        csv += "site\(site),https://\(host)/auth,user\(index)@mail.example,pw-\(index),\n"
    }
    let vault = try! Vault.create(
        at: folder.appendingPathComponent("autofill.sqlite"),
        masterPassword: "benchmark master password",
        kdf: .random(logN: 10),
        allowInsecureKDF: true
    )
    _ = try! vault.importItems(ImportParser.parse(Array(csv.utf8)))
    let index = IdentityIndex(try! vault.list().credentials)
    precondition(index.count == 100_000)
    let urls = (0..<1000).map {
        "https://\($0 % 2 == 0 ? "www." : "login.")site\($0 * 17 % 20_000).example/signin?next=/"
    }

    passkeyBenchmarks()

    Benchmark("Identity query over 100,000 credentials", configuration: .init(metrics: [.wallClock])) { benchmark in
        var found = 0
        for iteration in benchmark.scaledIterations {
            found += try index.query(url: urls[iteration % urls.count]).count
        }
        blackHole(found)
    }
}
