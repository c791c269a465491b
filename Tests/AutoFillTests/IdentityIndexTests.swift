import Foundation
import Testing
import _KeyhavenSupport

@testable import AutoFill
@testable import Vault

/// Match tiers and the registrable-domain bound (docs/autofill-protocol.md §4), on the real PSL
/// and Apple's shared-credential groups.
@Suite struct IdentityIndexTests {
    static func credential(
        _ services: [String],
        user: String,
        modified: TimeInterval = 0,
        totp: String? = nil
    )
        -> Credential
    {
        Credential(
            id: CredentialID(),
            content: CredentialContent(
                services: services.map(ServiceIdentifier.init),
                user: user,
                password: "pw-\(user)",
                totp: totp
            ),
            created: Date(timeIntervalSince1970: 0),
            modified: Date(timeIntervalSince1970: modified),
            deleted: nil
        )
    }

    func matches(_ index: IdentityIndex, _ url: String) throws -> [String] {
        try index.query(url: url, kinds: [.password]).map { "\($0.user):\($0.match!.rawValue)" }
    }

    @Test func tiersComeExactThenParentThenChildThenSharedBackend() throws {
        let index = IdentityIndex([
            Self.credential(["https://login.example.com"], user: "exact"),
            Self.credential(["example.com"], user: "parent"),
            Self.credential(["https://deep.login.example.com"], user: "child"),
            Self.credential(["envato.com"], user: "shared-group"),
            Self.credential(["https://other.test"], user: "unrelated"),
        ])
        #expect(
            try matches(index, "https://login.example.com/signin?x=1") == [
                "exact:exact", "parent:parent", "child:child",
            ]
        )
        #expect(try matches(index, "https://themeforest.net/login") == ["shared-group:sharedBackend"])
        #expect(try matches(index, "https://nothing.example.org/") == [])
    }

    @Test func aPublicSuffixIsNeverASharedParent() throws {
        let index = IdentityIndex([
            Self.credential(["github.io"], user: "suffix"),
            Self.credential(["co.uk"], user: "uk-suffix"),
            Self.credential(["https://bob.github.io"], user: "bob"),
            Self.credential(["https://shop.example.co.uk"], user: "shop"),
        ])
        #expect(try matches(index, "https://alice.github.io/") == [])
        #expect(try matches(index, "https://bob.github.io/") == ["bob:exact"])
        #expect(try matches(index, "https://example.co.uk/") == ["shop:child"])
        #expect(try matches(index, "https://www.example.co.uk/") == [])  // a sibling is not offered
        #expect(try matches(index, "https://other.co.uk/") == [])
    }

    @Test func loopbackAndIPAddressesMatchByExactHostAndPort() throws {
        let index = IdentityIndex([
            Self.credential(["http://127.0.0.1:8080"], user: "ip"),
            Self.credential(["http://localhost:9000"], user: "local"),
        ])
        #expect(try matches(index, "http://127.0.0.1:8080/login") == ["ip:exact"])
        #expect(try matches(index, "http://127.0.0.1:8081/login") == [])
        #expect(try matches(index, "http://localhost:9000/") == ["local:exact"])
        #expect(try matches(index, "http://127.0.0.2:8080/") == [])
    }

    @Test func theSchemeMustMatchAndOnlyWebPagesAsk() throws {
        let index = IdentityIndex([Self.credential(["https://example.com"], user: "tls")])
        #expect(try matches(index, "http://example.com/") == [])
        #expect(throws: AutoFillError.self) { try index.query(url: "file:///etc/passwd") }
        #expect(throws: AutoFillError.self) { try index.query(url: "chrome-extension://abc/popup.html") }
    }

    @Test func withinATierTheMoreRecentlyUsedComesFirst() throws {
        let older = Self.credential(["example.com"], user: "older", modified: 100)
        let newer = Self.credential(["example.com"], user: "newer", modified: 200)
        var index = IdentityIndex([older, newer])
        #expect(try matches(index, "https://example.com/") == ["newer:exact", "older:exact"])
        index.lastUsed[older.id] = Date(timeIntervalSince1970: 300)
        #expect(try matches(index, "https://example.com/") == ["older:exact", "newer:exact"])
    }

    @Test func oneTimeCodesAreTheirOwnIdentitiesAndNothingSecretIsInAnIdentity() throws {
        let both = Self.credential(["example.com"], user: "ada", totp: "JBSWY3DPEHPK3PXP")
        let index = IdentityIndex([both])
        let identities = try index.query(url: "https://example.com/")
        #expect(identities.map(\.kind) == [.password, .oneTimeCode])
        let encoded = String(decoding: JSONValue.array(identities.map(\.json)).encoded(), as: UTF8.self)
        #expect(!encoded.contains("pw-ada") && !encoded.contains("JBSWY3DP"))
    }

    @Test func updatesReplaceAndRemoveEntries() throws {
        var credential = Self.credential(["example.com"], user: "ada")
        var index = IdentityIndex([credential])
        credential.services = [ServiceIdentifier("example.org")]
        index.insert(credential)
        #expect(try matches(index, "https://example.com/") == [])
        #expect(try matches(index, "https://example.org/") == ["ada:exact"])
        index.remove(credential.id)
        #expect(try matches(index, "https://example.org/") == [])
        #expect(index.count == 0)
    }
}
