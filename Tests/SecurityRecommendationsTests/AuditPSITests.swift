import BreachCheck
import BreachPSI
import Foundation
import KeyhavenTesting
import SecurityRecommendations
import Testing
import Vault

/// The audit with a breach-PSI server as its source: the breached passwords are found, and a server
/// that changes its key mid-audit leaves every password "not checked", never "not breached".
struct AuditPSITests {
    /// Answers with `servers[0]` for the first `switchAfter` queries, then with `servers[1]`.
    final class Switching: BreachPSITransport, @unchecked Sendable {
        let servers: [BreachPSIServer]
        let switchAfter: Int
        private let lock = NSLock()
        private var count = 0
        var sent: Int { lock.withLock { count } }

        init(_ servers: [BreachPSIServer], switchAfter: Int = .max) {
            self.servers = servers
            self.switchAfter = switchAfter
        }

        var serverDescription: String { "stand-in" }
        func publication() async throws(BreachPSIError) -> BreachPSIPublication {
            BreachPSIPublication(publicKey: servers[0].key.publicKey)
        }
        func send(_ request: [UInt8]) async throws(BreachPSIError) -> [UInt8] {
            let number = lock.withLock {
                count += 1
                return count
            }
            return try servers[number > switchAfter ? 1 : 0].answer(encoded: request)
        }
    }

    static func server(seed: UInt64) throws -> BreachPSIServer {
        var rng = SeededRandomNumberGenerator(seed: seed)
        let key = BreachPSIServerKey(using: &rng)
        var builder = BreachPSIBucketBuilder(key: key)
        try builder.add(
            contentsOf: ["password1", "Sunflower-Orbit-7765!", "unrelated"].map(SHA1Digest.init(password:))
        )
        return BreachPSIServer(key: key, buckets: builder.finish())
    }

    func credentials() throws -> [Credential] {
        let test = try TestVault()
        _ = try test.vault.importFile(Fixtures.url("audit-chrome.csv"))
        return try test.vault.list().credentials
    }

    @Test func breachedPasswordsAreFound() async throws {
        let transport = Switching([try Self.server(seed: 5)])
        let checker = BreachPSIChecker(transport: transport)
        let report = await SecurityAudit(breachSource: .psi(checker)).run(try credentials()).report
        #expect(report.summary.breachCheck == .psi)
        // 18 passwords, 13 distinct (reuse): one batch of 16, not two.
        #expect(transport.sent == 16)
        #expect(report.summary.notices.contains(SecurityAudit.unpinnedNotice))
        #expect(
            report.items.filter { $0.issues.contains(.breached) }.map(\.service).sorted()
                == ["forum.example.org", "leaked.example"]
        )
        #expect(report.items.filter { $0.breachCount == 1 }.count == 2)
    }

    @Test func aKeyChangedMidAuditLeavesEveryPasswordNotChecked() async throws {
        // The fixture has 18 passwords, 13 distinct: two batches of 8; the second is answered
        // under another key.
        let transport = Switching([try Self.server(seed: 5), try Self.server(seed: 6)], switchAfter: 8)
        let checker = BreachPSIChecker(transport: transport, batchSize: 8)
        let report = await SecurityAudit(breachSource: .psi(checker)).run(
            try credentials()
        ).report
        #expect(report.summary.breachCheck == .skipped)
        #expect(report.summary.breached == 0)
        #expect(report.items.allSatisfy { $0.breachCount == nil })
        #expect(
            report.summary.notices.contains {
                $0.contains("a key other than the one published") && $0.contains("18 password(s) not checked")
            },
            "\(report.summary.notices)"
        )
    }
}
