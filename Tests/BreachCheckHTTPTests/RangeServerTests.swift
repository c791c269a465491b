import BreachCheck
import BreachCheckHTTP
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyhavenTesting
import Testing

/// The range server answers as api.pwnedpasswords.com does, and our client reads it back.
struct RangeServerTests {
    static func makeIndex() throws -> (BreachIndex, BreachCorpus) {
        let directory = try TemporaryDirectory.make()
        let corpus = BreachCorpus(size: 40_000, seed: 11)
        let source = directory.appendingPathComponent("pwned.txt")
        _ = try corpus.write(to: source, sorted: false, lineEnding: "\r\n")
        let output = directory.appendingPathComponent("pwned.khbi")
        _ = try BreachIndexBuilder(kind: .full).build(input: source, output: output)
        return (try BreachIndex(url: output), corpus)
    }

    @Test func answersLikeThePublicAPI() async throws {
        let (index, corpus) = try Self.makeIndex()
        let server = try RangeServer(index: index)
        let app = Application(router: server.router())
        let sample = corpus.present[17]
        try await app.test(.router) { client in
            // Lower-case prefixes are accepted; suffixes come back upper-case, in order, CRLF.
            try await client.execute(uri: "/range/\(sample.digest.prefix.lowercased())", method: .get) { response in
                #expect(response.status == .ok)
                let text = String(buffer: response.body)
                #expect(!text.hasSuffix("\r\n"))
                let lines = text.components(separatedBy: "\r\n")
                let expected = corpus.present.filter { $0.digest.prefix == sample.digest.prefix }
                    .map { "\($0.digest.suffix):\($0.count)" }.sorted()
                #expect(lines == expected)
            }
            try await client.execute(
                uri: "/range/\(sample.digest.prefix)",
                method: .get,
                headers: [HTTPField.Name("Add-Padding")!: "true"]
            ) {
                response in
                let lines = String(buffer: response.body).components(separatedBy: "\r\n")
                #expect((800...1000).contains(lines.count))
                #expect(lines == lines.sorted())
                #expect(lines.contains("\(sample.digest.suffix):\(sample.count)"))
                #expect(
                    lines.filter { $0.hasSuffix(":0") }.count == lines.count
                        - corpus.present.filter {
                            $0.digest.prefix == sample.digest.prefix
                        }.count
                )
                #expect(
                    lines.allSatisfy {
                        $0.count >= 37 && $0.prefix(35).allSatisfy(\.isHexDigit) && $0 == $0.uppercased()
                    }
                )
            }
            for bad in ["ABCD", "ABCDEF", "GHIJK", "12%2034"] {
                try await client.execute(uri: "/range/\(bad)", method: .get) { response in
                    #expect(response.status == .badRequest)
                }
            }
        }
    }

    @Test func ourClientReadsOurServer() async throws {
        let (index, corpus) = try Self.makeIndex()
        let server = try RangeServer(index: index)
        let app = Application(router: server.router(), configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            let base = "http://127.0.0.1:\(client.port!)"
            let rangeClient = RangeClient(transport: HTTPRangeTransport(base: base), baseDescription: base)
            let present = Array(corpus.present.prefix(300))
            let absent = Array(corpus.absent.prefix(300))
            let counts = try await rangeClient.counts(for: present.map(\.digest) + absent)
            #expect(counts == present.map(\.count) + Array(repeating: 0, count: absent.count))
        }
    }

    @Test func compactIndexesCannotServe() throws {
        let directory = try TemporaryDirectory.make()
        let source = directory.appendingPathComponent("p.txt")
        try Data("\(SHA1Digest(password: "x").hex):1\n".utf8).write(to: source)
        let output = directory.appendingPathComponent("p.khbi")
        _ = try BreachIndexBuilder(kind: .compact).build(input: source, output: output)
        #expect(throws: BreachError(.needsFullIndex, "")) { try RangeServer(index: BreachIndex(url: output)) }
    }
}
