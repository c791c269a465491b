import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Synchronization
import Testing
import _KeyhavenSupport
import _KeyhavenWeb

/// ``CSRF`` and ``DoubleSubmitToken``: tokens compared in constant time, the double-submit cookie,
/// and what the browser says about where a request came from.
struct CSRFTests {
    /// Random bytes that count up, so each token is known.
    final class Counter: Sendable {
        let next = Mutex<UInt8>(0)
        func bytes(_ count: Int) -> [UInt8] {
            next.withLock { value in
                value &+= 1
                return [UInt8](repeating: value, count: count)
            }
        }
    }

    static func request(_ headers: HTTPFields) -> Request {
        Request(
            head: HTTPRequest(
                method: .post,
                scheme: "http",
                authority: "shiny.example",
                path: "/",
                headerFields: headers
            ),
            body: .init(buffer: ByteBuffer())
        )
    }

    @Test func theSynchronizerTokenMatchesOnlyItself() {
        #expect(CSRF.matches("abc", "abc"))
        #expect(!CSRF.matches("abd", "abc"))
        #expect(!CSRF.matches("ab", "abc"))
        #expect(!CSRF.matches(nil, "abc"))
        // No token kept (a session without one) never matches, not even an empty one.
        #expect(!CSRF.matches("", ""))
    }

    @Test func theDoubleSubmitTokenIsTheCookieAndTheFieldEqual() {
        let counter = Counter()
        let tokens = DoubleSubmitToken(cookieName: "csrf", maxAge: 600) { counter.bytes($0) }
        let (token, headers) = tokens.issue(for: Self.request([:]), reuse: true, secure: true)
        #expect(token == String(repeating: "01", count: 16))
        let cookie = headers[.setCookie] ?? ""
        #expect(cookie.hasPrefix("csrf=\(token)"))
        for attribute in ["HttpOnly", "SameSite=Lax", "Secure", "Max-Age=600", "Path=/"] {
            #expect(cookie.contains(attribute), "\(attribute)")
        }
        let browser = Self.request([.cookie: "csrf=\(token)"])
        #expect(tokens.isGenuine(browser, token: token))
        #expect(!tokens.isGenuine(browser, token: String(repeating: "02", count: 16)))
        #expect(!tokens.isGenuine(browser, token: nil))
        #expect(!tokens.isGenuine(Self.request([:]), token: token), "no cookie")
        let malformed = Self.request([.cookie: "csrf=short"])
        #expect(!tokens.isGenuine(malformed, token: "short"), "a cookie the server did not make")
        // Kept while the browser holds a good one (shiny); new each time when not reused (the provider).
        #expect(tokens.issue(for: browser, reuse: true, secure: false) == (token, [:]))
        let fresh = tokens.issue(for: browser, reuse: false, secure: false)
        #expect(fresh.token != token && !(fresh.headers[.setCookie] ?? "").contains("Secure"))
    }

    @Test func aRequestFromAnotherSiteIsRefused() {
        let own = ServiceOrigin.of(url: "https://shiny.example")
        func same(_ headers: HTTPFields, required: Bool = false) -> Bool {
            CSRF.isSameOrigin(Self.request(headers), originRequired: required) { $0 == own }
        }
        let site = HTTPField.Name("Sec-Fetch-Site")!
        #expect(same([.origin: "https://shiny.example"]))
        #expect(same([.origin: "https://shiny.example", site: "same-origin"]))
        #expect(same([site: "none"]), "the person's own navigation")
        #expect(same([:]), "no Origin: the token decides")
        #expect(!same([:], required: true))
        #expect(!same([.origin: "https://attacker.example"]))
        #expect(!same([.origin: "null"]))
        #expect(!same([.origin: "https://shiny.example", site: "cross-site"]))
        #expect(!same([.origin: "https://shiny.example", site: "same-site"]))
        #expect(!same([.origin: "http://shiny.example"]), "another scheme is another origin")
    }
}
