import Foundation
import Testing

@testable import _KeyhavenSupport

@Suite struct PublicSuffixListTests {
    /// The list's own test vectors (`tests/test_psl.txt` upstream): every
    /// `checkPublicSuffix(input, registrableDomain)` line, `null` as nil.
    static let vectors: [(input: String?, expected: String?)] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/test_psl.txt")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        func value(_ raw: Substring) -> String? {
            let trimmed = raw.trimmingCharacters(in: .whitespaces)
            return trimmed == "null" ? nil : String(trimmed.dropFirst().dropLast())
        }
        return text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("checkPublicSuffix("), let close = line.lastIndex(of: ")") else { return nil }
            let arguments = line[line.index(line.startIndex, offsetBy: "checkPublicSuffix(".count)..<close]
            let parts = arguments.split(separator: ",", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            return (value(parts[0]), value(parts[1]))
        }
    }()

    @Test func upstreamVectors() {
        #expect(Self.vectors.count == 78)
        var checked = 0
        for (input, expected) in Self.vectors {
            guard let input else { continue }
            #expect(PublicSuffixList.shipped.registrableDomain(of: input) == expected, "\(input)")
            checked += 1
        }
        #expect(checked == 77)
    }

    @Test func publicSuffixes() {
        let list = PublicSuffixList.shipped
        #expect(list.publicSuffix(of: "www.example.co.uk") == "co.uk")
        #expect(list.publicSuffix(of: "alice.github.io") == "github.io")
        #expect(list.registrableDomain(of: "github.io") == nil)
        #expect(list.registrableDomain(of: "alice.github.io") == "alice.github.io")
        #expect(list.registrableDomain(of: "WWW.Example.COM.") == "example.com")
        #expect(list.registrableDomain(of: "a..b.com") == nil)
    }

    @Test func rulesFromText() {
        let list = PublicSuffixList(
            listText: """
                // a comment
                com
                *.wild.com
                !keep.wild.com

                bücher.de trailing text is ignored
                """
        )
        #expect(list.registrableDomain(of: "a.example.com") == "example.com")
        #expect(list.registrableDomain(of: "x.y.wild.com") == "x.y.wild.com")
        #expect(list.registrableDomain(of: "y.wild.com") == nil)
        #expect(list.registrableDomain(of: "a.keep.wild.com") == "keep.wild.com")
        #expect(list.registrableDomain(of: "shop.bücher.de") == "shop.bücher.de")
        #expect(list.registrableDomain(of: "shop.xn--bcher-kva.de") == "shop.xn--bcher-kva.de")
        #expect(list.publicSuffix(of: "xn--bcher-kva.de") == "xn--bcher-kva.de")
    }

    /// Found by FuzzServiceOrigin: a one-label exception rule left `com` with an empty public suffix.
    @Test func aOneLabelExceptionExceptsNothing() {
        let list = PublicSuffixList(listText: "!com\n*.ck\n!www.ck\n")
        #expect(list.publicSuffix(of: "com") == "com")
        #expect(list.registrableDomain(of: "a.com") == "a.com")
        #expect(list.registrableDomain(of: "www.ck") == "www.ck")
        #expect(list.registrableDomain(of: "a.b.ck") == "a.b.ck")
    }

    /// RFC 3492 section 7.1 samples and IDNA's own examples.
    @Test(arguments: [
        ("bücher", "bcher-kva"),
        ("食狮", "85x722f"),
        ("公司", "55qx5d"),
        ("中国", "fiqs8s"),
        ("他们为什么不说中文", "ihqwcrb4cv8a8dqg056pqjye"),
        ("ليهمابتكلموشعربي؟", "egbpdaj6bu4bxfgehfvwxn"),
        ("почемужеонинеговорятпорусски", "b1abfaaepdrnnbgefbadotcwatmq2g4l"),
        ("3年B組金八先生", "3B-ww4c5e180e575a65lsy2b"),
    ])
    func punycode(_ label: String, _ encoded: String) {
        #expect(Punycode.encode(Substring(label)) == encoded)
        #expect(Punycode.asciiLabel(Substring(label)) == "xn--" + encoded)
    }

    @Test func originsKnowTheirSite() throws {
        let origin = try #require(ServiceOrigin("https://a.b.example.co.uk/login"))
        #expect(origin.registrableDomain == "example.co.uk")
        #expect(origin.hostAndParentsWithinSite == ["a.b.example.co.uk", "b.example.co.uk", "example.co.uk"])
        #expect(try #require(ServiceOrigin("github.io")).hostAndParentsWithinSite == ["github.io"])
        #expect(try #require(ServiceOrigin("alice.github.io")).hostAndParentsWithinSite == ["alice.github.io"])
        #expect(try #require(ServiceOrigin("http://127.0.0.1:8080")).registrableDomain == nil)
        #expect(try #require(ServiceOrigin("http://[::1]:8080")).registrableDomain == nil)
        #expect(try #require(ServiceOrigin("http://localhost:8080")).registrableDomain == nil)
        #expect(try #require(ServiceOrigin("http://localhost:8080")).hostAndParentsWithinSite == ["localhost"])
    }
}
