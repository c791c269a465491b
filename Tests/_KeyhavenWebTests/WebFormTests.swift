import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import _KeyhavenWeb

/// ``WebForm``: forms and queries are read strictly — a field given twice, another content type or
/// a body too large is refused, never read as the first copy or as an empty form.
struct WebFormTests {
    struct SignIn: Decodable {
        var user: String
        var code: String?
    }

    /// A router that answers with what it read, or the refusal's code.
    static func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/fields") { request, _ -> String in
            do throws(WebFormError) {
                let fields = try await WebForm.fields(of: request, limit: 64)
                return fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            } catch {
                return "refused:\(error.code.rawValue)"
            }
        }
        router.post("/only") { request, _ -> String in
            do throws(WebFormError) {
                let fields = try await WebForm.fields(of: request, only: ["csrf", "user"])
                return fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            } catch {
                return "refused:\(error.code.rawValue)"
            }
        }
        router.post("/typed") { request, _ -> String in
            do throws(WebFormError) {
                let form = try await WebForm.decode(SignIn.self, from: request)
                return "\(form.user)/\(form.code ?? "-")"
            } catch {
                return "refused:\(error.code.rawValue)"
            }
        }
        router.get("/query") { request, _ -> String in
            do throws(WebFormError) {
                return try WebForm.query(of: request)["q"] ?? "-"
            } catch {
                return "refused:\(error.code.rawValue)"
            }
        }
        router.post("/unhandled") { request, _ -> String in
            _ = try await WebForm.fields(of: request)
            return "read"
        }
        return router
    }

    static func post(
        _ client: some TestClientProtocol,
        _ path: String,
        _ body: String,
        type: String = "application/x-www-form-urlencoded"
    ) async throws -> String {
        try await client.execute(
            uri: path,
            method: .post,
            headers: [.contentType: type],
            body: ByteBuffer(string: body)
        ) {
            String(buffer: $0.body)
        }
    }

    @Test func aFormIsReadWithItsEscapes() async throws {
        try await Application(router: Self.router()).test(.router) { client async throws in
            #expect(try await Self.post(client, "/fields", "b=two+words&a=%C3%A9%26") == "a=é&,b=two words")
            #expect(
                try await Self.post(client, "/fields", "a=1", type: "application/x-www-form-urlencoded; charset=utf-8")
                    == "a=1"
            )
            #expect(try await Self.post(client, "/typed", "user=ada") == "ada/-")
            #expect(try await Self.post(client, "/typed", "code=123456&user=ada") == "ada/123456")
        }
    }

    @Test func aFieldGivenTwiceIsRefused() async throws {
        try await Application(router: Self.router()).test(.router) { client in
            #expect(
                try await Self.post(client, "/fields", "csrf=mine&user=ada&csrf=theirs") == "refused:duplicateField"
            )
            #expect(try await Self.post(client, "/fields", "a=1&a=1") == "refused:duplicateField")
            #expect(try await Self.post(client, "/typed", "user=ada&user=eve") == "refused:duplicateField")
            try await client.execute(uri: "/query?q=a&q=b", method: .get) {
                #expect(String(buffer: $0.body) == "refused:duplicateField")
            }
            try await client.execute(uri: "/query?q=a+b", method: .get) { #expect(String(buffer: $0.body) == "a b") }
        }
    }

    @Test func aFieldTheCallerDoesNotNameIsRefusedWhenItNamesThem() async throws {
        try await Application(router: Self.router()).test(.router) { client async throws in
            #expect(try await Self.post(client, "/only", "user=ada&csrf=t") == "csrf=t,user=ada")
            #expect(try await Self.post(client, "/only", "user=ada") == "user=ada", "a field may be left out")
            #expect(try await Self.post(client, "/only", "user=ada&csrf=t&admin=1") == "refused:unknownField")
            #expect(try await Self.post(client, "/only", "user=ada&user=eve") == "refused:duplicateField")
            // Without a list, any name is read (the provider's OAuth endpoints ignore what they do not know).
            #expect(try await Self.post(client, "/fields", "user=ada&admin=1") == "admin=1,user=ada")
        }
    }

    @Test func anythingButAFormIsRefusedNotReadAsAnEmptyOne() async throws {
        try await Application(router: Self.router()).test(.router) { client in
            #expect(try await Self.post(client, "/fields", "a=1", type: "text/plain") == "refused:notForm")
            #expect(try await Self.post(client, "/fields", #"{"a":1}"#, type: "application/json") == "refused:notForm")
            let large = "a=" + String(repeating: "x", count: 100)
            #expect(try await Self.post(client, "/fields", large) == "refused:tooLarge")
            #expect(try await Self.post(client, "/typed", "code=1") == "refused:unreadable")
            // Let through, the refusal renders itself: 415, 400.
            try await client.execute(
                uri: "/unhandled",
                method: .post,
                headers: [.contentType: "text/plain"],
                body: ByteBuffer(string: "a=1")
            ) { #expect($0.status == .unsupportedMediaType) }
            try await client.execute(
                uri: "/unhandled",
                method: .post,
                headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: "a=1&a=2")
            ) { response in
                #expect(response.status == .badRequest)
                #expect(String(buffer: response.body).contains("more than once"))
            }
        }
    }
}
