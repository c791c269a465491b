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
        private var prefixes: [UInt16] = []
        var sent: Int { lock.withLock { count } }
        /// The bucket of every request sent.
        var buckets: [UInt16] { lock.withLock { prefixes } }

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
                if request.count > 2 { prefixes.append(UInt16(request[1]) << 8 | UInt16(request[2])) }
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
                $0.contains("a key other than the one published")
                    && $0.contains("18 credential(s) not checked, 13 distinct password(s)")
            },
            "\(report.summary.notices)"
        )
    }

    // MARK: The local list of the most common leaked passwords (issue 29, item 3)

    /// A server that cannot be reached: nothing it answers.
    final class Down: BreachPSITransport, @unchecked Sendable {
        let key: BreachPSIPublicKey
        private let lock = NSLock()
        private var count = 0
        var sent: Int { lock.withLock { count } }
        init(key: BreachPSIPublicKey) { self.key = key }
        var serverDescription: String { "down" }
        func publication() async throws(BreachPSIError) -> BreachPSIPublication { .init(publicKey: key) }
        func send(_ request: [UInt8]) async throws(BreachPSIError) -> [UInt8] {
            lock.withLock { count += 1 }
            throw BreachPSIError(.unreachable, "cannot reach down")
        }
    }

    /// A top list (`keyhaven breach top`'s builder) of the 3 most common of a small corpus, which
    /// holds the fixture's "password1" but not "Sunflower-Orbit-7765!" (seen once: below the cut).
    static func topList() throws -> BreachIndex {
        let directory = try TemporaryDirectory.make()
        let text = [
            "\(SHA1Digest(password: "password1").hex):2500000",
            "\(SHA1Digest(password: "123456").hex):40000000",
            "\(SHA1Digest(password: "Sunflower-Orbit-7765!").hex):1",
            "\(SHA1Digest(password: "qwerty").hex):9000000",
            "\(SHA1Digest(password: "rare-one").hex):2",
        ].joined(separator: "\n")
        let source = directory.appendingPathComponent("pwned.txt")
        try Data(text.utf8).write(to: source)
        let builder = try BreachTopListBuilder(top: 3)
        let output = directory.appendingPathComponent("top.khbi")
        _ = try builder.write(try builder.select(input: source), to: output)
        return try BreachIndex(url: output)
    }

    /// Deterministic padding, so that what the server sees can be compared.
    static func padding() -> @Sendable () -> SHA1Digest {
        final class Counter: @unchecked Sendable {
            let lock = NSLock()
            var value = 0
        }
        let counter = Counter()
        return {
            let value = counter.lock.withLock {
                counter.value += 1
                return counter.value
            }
            return SHA1Digest(password: "padding-\(value)")
        }
    }

    /// The server is down: the password on the local list is reported breached (named as found
    /// there), the others "not checked" (never "not breached"); the batch was still attempted.
    @Test func theLocalListAnswersWhileTheServerIsDown() async throws {
        let transport = Down(key: try Self.server(seed: 5).key.publicKey)
        let checker = BreachPSIChecker(transport: transport, localList: try Self.topList())
        let report = await SecurityAudit(breachSource: .psi(checker)).run(try credentials()).report
        #expect(report.summary.breachCheck == .skipped)
        let forum = try #require(report.items.first { $0.service == "forum.example.org" })
        // The list's count (2,500,000 seen, kept as a power of two capped at 2^15), not a placeholder 1.
        #expect(
            forum.issues.contains(.breached) && forum.breachCount == 32768 && forum.breachSource == "local-list"
        )
        #expect(report.summary.breached == 1)
        #expect(report.items.filter { $0.service != "forum.example.org" }.allSatisfy { $0.breachCount == nil })
        #expect(
            report.summary.notices.contains {
                $0.contains("cannot reach down") && $0.contains("17 credential(s) not checked, 12 distinct password(s)")
                    && $0.contains("1 found in the local list")
            },
            "\(report.summary.notices)"
        )
        // The padded batch was sent as it would have been without the list (it failed at once).
        #expect(transport.sent >= 1)
    }

    /// With the server up: the local password is never sent (its bucket is not among the requests),
    /// the rest go through the server, and the server sees the same 16 requests as without a list.
    @Test func theRestGoThroughTheServerInTheSameBatches() async throws {
        let server = try Self.server(seed: 5)
        let local = BreachPSI.prefix(of: SHA1Digest(password: "password1"))
        let others = try credentials().compactMap(\.password).filter { $0 != "password1" }
        #expect(!others.map { BreachPSI.prefix(of: SHA1Digest(password: $0)) }.contains(local))
        #expect(!(1...64).map { BreachPSI.prefix(of: SHA1Digest(password: "padding-\($0)")) }.contains(local))

        let withList = Switching([server])
        let checker = BreachPSIChecker(transport: withList, localList: try Self.topList(), randomDigest: Self.padding())
        let report = await SecurityAudit(breachSource: .psi(checker)).run(try credentials()).report
        #expect(report.summary.breachCheck == .psi)
        #expect(withList.sent == 16, "13 distinct passwords, 1 found locally: still one batch of 16")
        #expect(!withList.buckets.contains(local), "the local password's bucket never reaches the server")
        let forum = try #require(report.items.first { $0.service == "forum.example.org" })
        #expect(forum.breachCount == 32768 && forum.breachSource == "local-list")
        let leaked = try #require(report.items.first { $0.service == "leaked.example" })
        #expect(leaked.breachCount == 1 && leaked.breachSource == nil, "found by the server")
        #expect(report.items.filter { $0.breachCount == 0 }.count == 16)
        #expect(report.summary.notices.contains { $0.contains("1 distinct password(s) found in the local list") })

        // All found locally: the batch count still follows the number of distinct passwords.
        let allLocal = Switching([server])
        let everything = try await BreachPSIChecker(transport: allLocal, localList: Self.topList()).breached(
            [SHA1Digest(password: "password1"), SHA1Digest(password: "123456")]
        )
        #expect(everything == [true, true])
        #expect(allLocal.sent == 16)
    }

    /// 17 distinct passwords of which 2 are on the local list cost exactly 32 requests, as 17
    /// without a list do: the local ones keep their places (taken by stand-ins) rather than being
    /// dropped before batching (which would make 15: one batch). Neither local bucket is sent.
    @Test func seventeenPasswordsTwoLocalCostThirtyTwoRequests() async throws {
        var rng = SeededRandomNumberGenerator(seed: 17)
        let key = BreachPSIStandInKey(using: &rng)
        let local = ["password1", "123456"].map(SHA1Digest.init(password:))
        let others = (0..<15).map { SHA1Digest(password: "distinct-\($0)") } + [SHA1Digest(password: "unrelated")]
        let digests = [local[0]] + others.prefix(8) + [local[1]] + others.suffix(7)
        #expect(Set(digests).count == 17)
        let transport = Switching([try Self.server(seed: 5)])
        let checker = BreachPSIChecker(
            transport: transport,
            localList: try Self.topList(),
            standInKey: key,
            randomDigest: Self.padding()
        )
        #expect(checker.localMatches(digests).found.filter { $0 }.count == 2)
        let answers = try await checker.breached(digests)
        #expect(transport.sent == 32)
        #expect(answers == digests.map { local.contains($0) || $0 == SHA1Digest(password: "unrelated") })
        let localBuckets = Set(local.map(BreachPSI.prefix(of:)))
        #expect(localBuckets.isDisjoint(with: transport.buckets))
        #expect(local.allSatisfy { transport.buckets.contains(BreachPSI.prefix(of: key.standIn(for: $0))) })
    }

    /// Two audits of the same vault send the same buckets apart from the padding: a locally found
    /// password's stand-in is the same every run (HMAC under the device's key), so a server that
    /// compares runs cannot tell it from a password it is really asked about. Another device's key
    /// gives another stand-in.
    @Test func twoAuditsSendTheSameBuckets() async throws {
        var rng = SeededRandomNumberGenerator(seed: 77)
        let key = BreachPSIStandInKey(using: &rng)
        let list = try Self.topList()
        var runs: [[UInt16]] = []
        for _ in 0..<2 {
            // Padding from the system's random source, as in the tools.
            let transport = Switching([try Self.server(seed: 5)])
            let checker = BreachPSIChecker(transport: transport, localList: list, standInKey: key)
            let report = await SecurityAudit(breachSource: .psi(checker)).run(try credentials()).report
            #expect(report.summary.breachCheck == .psi)
            runs.append(transport.buckets)
        }
        let local = SHA1Digest(password: "password1")
        let standIn = BreachPSI.prefix(of: key.standIn(for: local))
        let sent = Set(
            try credentials().compactMap(\.password).filter { $0 != "password1" }.map {
                BreachPSI.prefix(of: SHA1Digest(password: $0))
            }
        )
        #expect(sent.count == 12)
        for buckets in runs {
            #expect(buckets.count == 16)
            #expect(buckets.contains(standIn) && sent.isSubset(of: buckets))
        }
        // 13 of the 16 (12 passwords and the stand-in) repeat; only the 3 paddings are new.
        var second = runs[1]
        var common = 0
        for bucket in runs[0] {
            if let index = second.firstIndex(of: bucket) {
                second.remove(at: index)
                common += 1
            }
        }
        #expect(common >= 13, "\(runs)")
        var otherRNG = SeededRandomNumberGenerator(seed: 78)
        #expect(BreachPSIStandInKey(using: &otherRNG).standIn(for: local) != key.standIn(for: local))
        #expect(key.standIn(for: local) != local && "\(key)".contains("…"))
    }

    /// The key file beside the list: made 0600 on first use, read back the same after.
    @Test func theStandInKeyIsKeptBesideTheList() throws {
        let directory = try TemporaryDirectory.make()
        let list = directory.appendingPathComponent("top.khbi")
        let first = try BreachPSIStandInKey.loadOrCreate(besideList: list)
        let file = BreachPSIStandInKey.url(besideList: list)
        #expect(file.lastPathComponent == "top.khbi.stand-in-key")
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let again = try BreachPSIStandInKey.loadOrCreate(besideList: list)
        let digest = SHA1Digest(password: "password1")
        #expect(again.standIn(for: digest) == first.standIn(for: digest))
        try Data("short".utf8).write(to: file)
        let damaged = #expect(throws: BreachPSIError.self) { try BreachPSIStandInKey.loadOrCreate(besideList: list) }
        #expect(damaged?.message.contains(file.path) == true)
    }

    /// A damaged list found at lookup: the passwords go to the server instead, with a notice;
    /// nothing is "not breached" for the list's sake.
    @Test func aDamagedListSendsToTheServer() async throws {
        let directory = try TemporaryDirectory.make()
        let url = directory.appendingPathComponent("top.khbi")
        // A compact index of the fixture's leaked passwords whose bucket-size nibbles all escape
        // (15) with no overflow entry: it opens (a lookup checks those), every lookup fails.
        let text = ["password1", "Sunflower-Orbit-7765!"].map { "\(SHA1Digest(password: $0).hex):5" }
        try Data(text.joined(separator: "\n").utf8).write(to: directory.appendingPathComponent("p.txt"))
        let builder = try BreachTopListBuilder(top: 10)
        _ = try builder.write(try builder.select(input: directory.appendingPathComponent("p.txt")), to: url)
        var bytes = try Data(contentsOf: url)
        let sizesOffset = Int(bytes[40..<48].withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }.littleEndian)
        let sizesLength = Int(bytes[48..<56].withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }.littleEndian)
        for index in sizesOffset..<(sizesOffset + sizesLength) { bytes[index] = 0xFF }
        try bytes.write(to: url)
        let damaged = try BreachIndex(url: url)
        let transport = Switching([try Self.server(seed: 5)])
        let checker = BreachPSIChecker(transport: transport, localList: damaged)
        #expect(checker.localMatches([SHA1Digest(password: "password1")]).failure?.code == .corrupt)
        let report = await SecurityAudit(breachSource: .psi(checker)).run(try credentials()).report
        #expect(report.summary.breachCheck == .psi)
        #expect(report.summary.breached == 2, "both found by the server")
        #expect(report.items.allSatisfy { $0.breachSource == nil })
        #expect(report.summary.notices.contains { $0.contains("could not be read") }, "\(report.summary.notices)")
    }
}
