import Testing
import _KeyhavenSupport

/// `application/x-www-form-urlencoded`, as the provider's forms and token endpoint read it.
struct FormURLEncodingTests {
    @Test func formDecoding() {
        let fields = FormURLEncoding.parse("a=1+2&b=%41%62%2B%26&c=caf%C3%A9&d=50%&e&f=%zz&=x")
        #expect(fields.map(\.name) == ["a", "b", "c", "d", "e", "f", ""])
        #expect(fields.map(\.value) == ["1 2", "Ab+&", "café", "50%", "", "%zz", "x"])
        #expect(FormURLEncoding.uniqueFields("a=1&a=2") == nil)
        // Only the first `=` separates; empty pairs are skipped; a cut-off or invalid escape.
        let edges = FormURLEncoding.parse("&&a=b=c&&t=%4&u=%C3&")
        #expect(edges.map(\.name) == ["a", "t", "u"])
        #expect(edges.map(\.value) == ["b=c", "%4", "\u{FFFD}"])
        #expect(FormURLEncoding.parse("").isEmpty && FormURLEncoding.parse("&").isEmpty)
        let original = [("scope", "name email"), ("state", "a&b=c/d?é"), ("empty", "")]
        let roundTrip = FormURLEncoding.parse(FormURLEncoding.encode(original))
        #expect(roundTrip.map(\.name) == original.map(\.0) && roundTrip.map(\.value) == original.map(\.1))
    }
}
