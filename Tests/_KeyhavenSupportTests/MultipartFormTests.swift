import Testing
import _KeyhavenSupport

@Suite struct MultipartFormTests {
    @Test func partsAreReadWithTheirNamesFileNamesAndBytes() throws {
        let body = Array(
            ("--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\none\r\n"
                + "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.csv\"\r\nContent-Type: text/csv\r\n\r\nline 1\r\nline 2\r\n"
                + "--b--\r\n").utf8
        )
        let form = try #require(MultipartForm.parse(body, boundary: "b"))
        #expect(form.text("a") == "one")
        #expect(form["file"]?.fileName == "x.csv")
        #expect(form.text("file") == "line 1\r\nline 2")
    }

    @Test func aSerializedFormParsesBackToTheSameParts() throws {
        let form = MultipartForm(parts: [
            .init(name: "csrf", body: Array("token".utf8)),
            .init(name: "file", fileName: "export.csv", body: Array("a,b\r\n--not-the-boundary\r\n\u{0}".utf8)),
            .init(name: "empty", body: []),
        ])
        #expect(MultipartForm.parse(form.serialized(boundary: "XyZ"), boundary: "XyZ") == form)
    }

    @Test func malformedBodiesAreRefusedWhole() {
        #expect(MultipartForm.parse(Array("garbage".utf8), boundary: "b") == nil)
        #expect(
            MultipartForm.parse(
                Array("--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nno end".utf8),
                boundary: "b"
            ) == nil
        )
        #expect(MultipartForm.parse(Array("--b\r\nX: y\r\n\r\nv\r\n--b--".utf8), boundary: "b") == nil)
        #expect(MultipartForm.boundary(contentType: "multipart/form-data; boundary=\"abc\"") == "abc")
        #expect(MultipartForm.boundary(contentType: "text/plain; boundary=abc") == nil)
        #expect(
            MultipartForm.boundary(contentType: "multipart/form-data; boundary=" + String(repeating: "x", count: 71))
                == nil
        )
    }
}
