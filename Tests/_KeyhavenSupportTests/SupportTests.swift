import Testing
import _KeyhavenSupport

@Suite struct ServiceOriginTests {
    @Test(arguments: [
        ("example.com", "https://example.com"),
        ("Example.COM.", "https://example.com"),
        ("example.com/login?x=1", "https://example.com"),
        ("example.com:8443", "https://example.com:8443"),
        ("https://Example.com:443/path", "https://example.com"),
        ("https://example.com:8443/", "https://example.com:8443"),
        ("http://127.0.0.1:8080/x", "http://127.0.0.1:8080"),
        ("http://localhost:3000", "http://localhost:3000"),
        ("http://[::1]:9000/", "http://[::1]:9000"),
        ("http://example.com/", "http://example.com"),
    ])
    func parses(_ text: String, _ expected: String) throws {
        #expect(try #require(ServiceOrigin(text)).serialized == expected)
    }

    @Test(arguments: [
        "", "ftp://example.com", "androidapp://com.example", "https://", "https://user:pw@example.com",
        "user@example.com", "exa mple.com", "https://example.com:0", "https://example.com:70000", "..",
        "javascript:alert(1)",
    ])
    func refuses(_ text: String) {
        #expect(ServiceOrigin(text) == nil)
    }

    /// An internationalised host has one spelling, the ASCII form a browser sends, and an origin
    /// written out parses back to itself (FuzzServiceOrigin found `--85x722f.xn--fiqs8s`, whose
    /// Unicode form Foundation refuses to parse).
    @Test(arguments: [
        ("https://Bücher.example/x", "https://xn--bcher-kva.example"),
        ("https://xn--bcher-kva.example", "https://xn--bcher-kva.example"),
        ("bücher.example", "https://xn--bcher-kva.example"),
        ("https://--85x722f.xn--fiqs8s", "https://--85x722f.xn--fiqs8s"),
        ("https://faß.de", "https://xn--fa-hia.de"),
        ("https://www.鋣.s矮公ᏸ.cn", "https://www.xn--zu4a.xn--s-nei9640bvg6a.cn"),
        ("https://ex%41mple.COM", "https://example.com"),
        ("https://ex%C3%BCmple.com", "https://xn--exmple-4ya.com"),
    ])
    func internationalisedHostsAreASCII(_ text: String, _ serialized: String) throws {
        let origin = try #require(ServiceOrigin(text))
        #expect(origin.serialized == serialized)
        #expect(ServiceOrigin(origin.serialized) == origin)
        #expect(origin.host.unicodeScalars.allSatisfy { $0.isASCII })
    }

    @Test func invalidPunycodeIsNotAHost() {
        #expect(ServiceOrigin("https://xn--zz.example") == nil)
        #expect(ServiceOrigin(scheme: .https, host: "bücher.example")?.host == "xn--bcher-kva.example")
    }

    @Test func loopbackPolicy() throws {
        for text in [
            "http://127.0.0.1", "http://127.8.9.10:1", "http://localhost", "http://app.localhost", "http://[::1]",
        ] {
            let origin = try #require(ServiceOrigin(text))
            #expect(origin.isLoopback, "\(text)")
            #expect(origin.isPotentiallyTrustworthy, "\(text)")
        }
        for text in ["http://example.com", "http://128.0.0.1", "http://localhost.example.com", "http://10.0.0.1"] {
            let origin = try #require(ServiceOrigin(text))
            #expect(!origin.isLoopback, "\(text)")
            #expect(!origin.isPotentiallyTrustworthy, "\(text)")
        }
        #expect(try #require(ServiceOrigin("https://example.com")).isPotentiallyTrustworthy)
    }

    @Test func servicesAreReadOverHTTPS() throws {
        #expect(ServiceOrigin(service: "http://example.com/login")?.serialized == "https://example.com")
        #expect(ServiceOrigin(service: "http://example.com:8080")?.serialized == "https://example.com:8080")
        #expect(ServiceOrigin(service: "http://127.0.0.1:8080")?.serialized == "http://127.0.0.1:8080")
        #expect(ServiceOrigin(service: "github.com")?.serialized == "https://github.com")
    }

    @Test func sameOrigin() throws {
        let origin = try #require(ServiceOrigin("https://example.com"))
        #expect(origin.isSameOrigin(as: "https://EXAMPLE.com:443/amp"))
        #expect(!origin.isSameOrigin(as: "http://example.com/amp"))
        #expect(!origin.isSameOrigin(as: "https://example.com:8443/amp"))
        #expect(!origin.isSameOrigin(as: "https://evil.example.com/amp"))
        #expect(!origin.isSameOrigin(as: "/amp"))
        #expect(origin.resolveSameOrigin("/amp") == "https://example.com/amp")
        #expect(origin.resolveSameOrigin("//evil.com/amp") == nil)
        #expect(origin.resolveSameOrigin("https://evil.com/amp") == nil)
        #expect(origin.resolveSameOrigin("https://example.com/amp") == "https://example.com/amp")
    }
}

@Suite struct EncodingTests {
    @Test func constantTime() {
        #expect(constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2]))
        #expect(constantTimeEqual("token", "token"))
        #expect(!constantTimeEqual("token", "tokem"))
    }

    @Test func hex() {
        #expect(Hex.encode([0x00, 0xAB, 0xFF]) == "00abff")
        #expect(Hex.encode([0x00, 0xAB, 0xFF], uppercase: true) == "00ABFF")
        #expect(Hex.decode("00abFF") == [0x00, 0xAB, 0xFF])
        #expect(Hex.decode("0") == nil)
        #expect(Hex.decode("zz") == nil)
    }

    /// RFC 4648 §10 vectors, in the URL-safe alphabet without padding.
    @Test func base64URL() {
        let vectors = [("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE")]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(plain) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("Zg==") == nil)
        #expect(Base64URL.decode("Zh") == nil)  // non-canonical trailing bits
        #expect(Base64URL.decode("Z") == nil)
    }

    @Test func formEncoding() throws {
        #expect(
            FormURLEncoding.parse("a=1&b=x+y&c=%2F%zz").map { "\($0.name)=\($0.value)" } == ["a=1", "b=x y", "c=/%zz"]
        )
        #expect(FormURLEncoding.uniqueFields("a=1&a=2") == nil)
        #expect(FormURLEncoding.encode([("e mail", "a&b=c")]) == "e%20mail=a%26b%3Dc")
    }

    @Test func jsonWriter() throws {
        var writer = JSONWriter()
        writer.string("s", "a\"b\\c\n\u{1}")
        writer.integer("i", 42)
        writer.bool("b", true)
        writer.string("skipped", nil)
        let text = String(decoding: writer.finished(), as: UTF8.self)
        #expect(text == #"{"s":"a\"b\\c\n\u0001","i":42,"b":true}"#)
        // Strings with nothing to escape are copied whole; one escape anywhere takes the slow path.
        var plain = JSONWriter()
        plain.string("p", "café \u{7F}/é")
        plain.string("q", "ends with a quote\"")
        plain.string("e", "")
        #expect(
            String(decoding: plain.finished(), as: UTF8.self)
                == "{\"p\":\"café \u{7F}/é\",\"q\":\"ends with a quote\\\"\",\"e\":\"\"}"
        )
    }
}

@Suite struct HTMLTests {
    @Test func escapesByDefault() {
        let name = #"<script>alert("x")</script> & 'y'"#
        let page: HTML = "<p title=\"\(name)\">\(name)</p>"
        #expect(
            page.rendered
                == "<p title=\"&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;\">"
                + "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;</p>"
        )
    }

    @Test func markupNestsWithoutDoubleEscaping() {
        let items: [HTML] = ["a<b", "c"].map { "<li>\($0)</li>" }
        let list: HTML = "<ul>\(items.joined())</ul>"
        #expect(list.rendered == "<ul><li>a&lt;b</li><li>c</li></ul>")
        let missing: String? = nil
        let optional: HTML = "[\(missing)]"
        #expect(optional.rendered == "[]")
    }
}
