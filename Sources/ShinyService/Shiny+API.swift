import Foundation
import HTTPTypes
public import Hummingbird

/// A sign-up through shiny's JSON API (`POST /api/signup`), as an app's own sign-up screen sends it.
public struct ShinySignUpRequest: Codable, Sendable {
    public var user: String
    public var password: String
    /// Enrol an authenticator: the answer carries its secret, once.
    public var totp: Bool?

    public init(user: String, password: String, totp: Bool? = nil) {
        self.user = user
        self.password = password
        self.totp = totp
    }
}

/// The account `POST /api/signup` created (201).
public struct ShinySignUpResponse: ResponseCodable, Sendable {
    public var user: String
    /// The authenticator's secret (base32), when one was enrolled: the only time shiny shows it.
    public var totpSecret: String?
}

/// A sign-in through shiny's JSON API (`POST /api/signin`).
public struct ShinySignInRequest: Codable, Sendable {
    public var user: String
    public var password: String
    /// The authenticator code, for an account with one; each code works once.
    public var code: String?

    public init(user: String, password: String, code: String? = nil) {
        self.user = user
        self.password = password
        self.code = code
    }
}

/// A session `POST /api/signin` opened (200).
public struct ShinySignInResponse: ResponseCodable, Sendable {
    /// The session token (what an app passes to Keyhaven as `userInfo["sessionToken"]`).
    public var token: String
    public var user: String
}

/// The body of every error shiny's JSON API answers: a stable code and a sentence.
public struct ShinyAPIProblem: Codable, Sendable, Equatable {
    /// `invalid_request`, `weak_password`, `exists`, `invalid_credentials`, `code_required`,
    /// `too_many_attempts` (429, with `Retry-After`), `invalid_notification`, `not_found` or
    /// `server_error`.
    public var error: String
    public var message: String
}

/// An error a JSON route throws: Hummingbird renders it as its status and a ``ShinyAPIProblem``.
struct ShinyAPIError: HTTPResponseError {
    let status: HTTPResponse.Status
    let problem: ShinyAPIProblem
    let headers: HTTPFields

    init(_ status: HTTPResponse.Status, _ error: String, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        problem = ShinyAPIProblem(error: error, message: message)
        self.headers = headers
    }

    static func invalidRequest(_ message: String) -> Self { Self(.badRequest, "invalid_request", message) }
    static func serverError(_ message: String) -> Self { Self(.internalServerError, "server_error", message) }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        try EditedResponse(status: status, headers: headers, response: problem).response(
            from: request,
            context: context
        )
    }
}

extension ShinyAPIProblem: ResponseEncodable {}

extension Shiny {
    /// JSON endpoints for apps (and tests, and `keyhaven demo`): sign up, sign in for a session token.
    func addAPI(to router: Router<ShinyRequestContext>) {
        router.post("/api/signup") { request, context -> EditedResponse<ShinySignUpResponse> in
            guard let body = try? await request.decode(as: ShinySignUpRequest.self, context: context),
                !body.user.isEmpty
            else { throw ShinyAPIError.invalidRequest("user and password are required") }
            if let problem = self.ruleProblem(body.password) {
                throw ShinyAPIError(.badRequest, "weak_password", problem)
            }
            guard (try? self.store.user(named: body.user)) == nil else {
                throw ShinyAPIError(.conflict, "exists", "this user name is taken")
            }
            let created: (user: ShinyStore.User, totpSecret: String?)
            do {
                created = try self.store.createUser(name: body.user, password: body.password, totp: body.totp ?? false)
            } catch {
                throw ShinyAPIError.serverError("could not create the account")
            }
            return EditedResponse(
                status: .created,
                response: ShinySignUpResponse(user: created.user.name, totpSecret: created.totpSecret)
            )
        }
        router.post("/api/signin") { request, context -> ShinySignInResponse in
            guard let body = try? await request.decode(as: ShinySignInRequest.self, context: context) else {
                throw ShinyAPIError.invalidRequest("user and password are required")
            }
            let outcome: Verification
            do throws(ShinyThrottle.Locked) {
                outcome = try self.verify(
                    user: body.user,
                    password: body.password,
                    code: body.code,
                    address: Self.clientAddress(context)
                )
            } catch {
                throw ShinyAPIError(
                    .tooManyRequests,
                    "too_many_attempts",
                    error.message,
                    headers: [.retryAfter: String(error.retryAfter)]
                )
            }
            switch outcome {
            case .wrong:
                throw ShinyAPIError(.unauthorized, "invalid_credentials", "wrong user name or password")
            case .needsCode:
                throw ShinyAPIError(.unauthorized, "code_required", "a valid authenticator code is required")
            case .verified(let user):
                do {
                    return ShinySignInResponse(token: try self.store.createSession(for: user.id), user: user.name)
                } catch {
                    throw ShinyAPIError.serverError("could not sign in")
                }
            }
        }
    }
}
