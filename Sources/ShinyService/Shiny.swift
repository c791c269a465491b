import AccountModification
import AccountModificationKit
import Foundation
import HTTPTypes
public import Hummingbird
import Logging
import NIOCore
import OneTimeCodes
import PasswordRules
import _KeyhavenSupport

/// shiny's settings.
public struct ShinyConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// The SQLite file of users; `nil` keeps them in memory.
    public var databasePath: String?
    /// scrypt cost for password hashes: N = 2^scryptLogN, r = 8, p = 1.
    public var scryptLogN: Int
    /// The password rules shiny enforces and publishes in its manifest.
    public var passwordRules: String
    /// Test hook: shiny stores (and reports) this password instead of the one Keyhaven sent.
    public var substitutePassword: (@Sendable (String) -> String)?
    /// For `keyhaven demo` only: also serve `/api/demo/…`, which shows any account's status and the
    /// notifications shiny received to whoever asks. Never on in a service people use; shiny
    /// refuses it unless it listens on loopback.
    public var demo: Bool

    public init(
        host: String = "127.0.0.1",
        port: Int = 8081,
        databasePath: String? = nil,
        scryptLogN: Int = 13,
        passwordRules: String =
            "required: lower; required: upper; required: digit; allowed: [-_.!]; minlength: 12; maxlength: 64;",
        substitutePassword: (@Sendable (String) -> String)? = nil,
        demo: Bool = false
    ) {
        self.host = host
        self.port = port
        self.databasePath = databasePath
        self.scryptLogN = scryptLogN
        self.passwordRules = passwordRules
        self.substitutePassword = substitutePassword
        self.demo = demo
    }
}

/// A configuration shiny cannot run with.
public struct ShinyConfigurationError: Error, CustomStringConvertible {
    public var description: String
}

/// shiny: an example service a developer would copy — accounts with scrypt-hashed passwords and
/// optional TOTP, sign-up and sign-in pages, `/.well-known/change-password`, and Keyhaven's
/// account-modification extension (one-tap strong passwords, with a step-up page for TOTP accounts).
public final class Shiny: Sendable {
    public let configuration: ShinyConfiguration
    let store: ShinyStore
    let stepUps = StepUps()
    let signIn = ShinySignIn()
    let kit: AccountModificationKit<ShinyExtension>

    public init(configuration: ShinyConfiguration = ShinyConfiguration()) throws {
        if configuration.demo, ServiceOrigin(scheme: .http, host: configuration.host)?.isLoopback != true {
            throw ShinyConfigurationError(
                description: "shiny's demo endpoints are served on loopback only, not on \(configuration.host)"
            )
        }
        self.configuration = configuration
        store = try ShinyStore(path: configuration.databasePath, scryptLogN: configuration.scryptLogN)
        let rules = PasswordRules(configuration.passwordRules)
        let signIn = self.signIn
        let requirements = PasswordRules.canonical(configuration.passwordRules)
        kit = AccountModificationKit(
            extension: ShinyExtension(
                store: store,
                rules: rules,
                stepUps: stepUps,
                signIn: signIn,
                substitute: configuration.substitutePassword
            ),
            manifest: {
                let provider = signIn.configured?.configuration
                return AccountModificationManifest(
                    endpoint: AccountModificationKit<ShinyExtension>.basePath,
                    supportsStrongPasswordChange: true,
                    supportsUpgradeToSignIn: provider != nil,
                    passwordGenerationRequirements: requirements,
                    signIn: provider.map { SignInConfiguration(issuer: $0.issuer, clientId: $0.clientId) }
                )
            },
            ledger: ShinyLedger(store: store)
        )
    }

    // MARK: Accounts (for tests and the demo)

    /// Creates an account; returns its TOTP secret when `totp` is on.
    @discardableResult
    public func createAccount(user: String, password: String, totp: Bool = false) throws -> String? {
        try store.createUser(name: user, password: password, totp: totp).totpSecret
    }

    /// Whether `password` (and `code`, for TOTP accounts) signs in to `user`. A check only: no
    /// session starts and the code is not used up (the pages and the API use it up).
    public func signIn(user: String, password: String, code: String? = nil) throws -> Bool {
        let (found, needsCode) = try store.verify(name: user, password: password, code: code)
        return found != nil && !needsCode
    }

    /// Request ids shiny was asked to cancel through the protocol.
    public var cancelledRequests: [String] {
        get async { await stepUps.cancelled }
    }

    // MARK: Serving

    /// Serves on the configured host and port (0 picks a free port) until SIGINT or SIGTERM;
    /// `onReady` gets the origin shiny listens on, once it does. What the `shiny` executable runs.
    public func run(onReady: @escaping @Sendable (String) async -> Void = { _ in }) async throws {
        try await application(port: configuration.port, logLevel: .warning, onReady: onReady).runService()
    }

    /// Serves on `host:port` (0 picks a free port) until the task is cancelled; `onReady` gets the
    /// origin it listens on. For running shiny inside a test.
    public func serve(port: Int = 0, onReady: @escaping @Sendable (String) async -> Void) async throws {
        try await application(port: port, logLevel: .critical, onReady: onReady).run()
    }

    func application(
        port: Int,
        logLevel: Logger.Level,
        onReady: @escaping @Sendable (String) async -> Void
    ) -> some ApplicationProtocol {
        var logger = Logger(label: "shiny")
        logger.logLevel = logLevel
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return Application(
            router: router(),
            configuration: .init(address: .hostname(configuration.host, port: port), serverName: "shiny"),
            onServerRunning: { channel in await onReady("http://\(host):\(channel.localAddress?.port ?? port)") },
            logger: logger
        )
    }

    /// Starts ``serve(port:onReady:)`` on a free port in a task of its own and waits until it
    /// listens. Returns the origin and the task; cancel the task to stop shiny.
    public func start() async throws -> (origin: String, server: Task<Void, any Error>) {
        let ready = AsyncStream.makeStream(of: String.self)
        let server = Task {
            defer { ready.continuation.finish() }
            try await serve { ready.continuation.yield($0) }
        }
        var iterator = ready.stream.makeAsyncIterator()
        guard let origin = await iterator.next() else {
            try await server.value  // the error that stopped it, if any
            throw StartFailure()
        }
        return (origin, server)
    }

    struct StartFailure: Error, CustomStringConvertible {
        var description: String { "shiny stopped before it listened" }
    }

    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        kit.addRoutes(to: router)
        addPages(to: router)
        addAPI(to: router)
        addStepUp(to: router)
        addSignIn(to: router)
        if configuration.demo { addDemo(to: router) }
        return router
    }

    static func html(_ page: HTML, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: page.rendered)))
    }

    static func redirect(_ location: String, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.location] = location
        return Response(status: .seeOther, headers: fields)
    }

    /// `application/x-www-form-urlencoded` fields.
    static func form(_ request: Request) async -> [String: String] {
        guard let buffer = try? await request.body.collect(upTo: 64 << 10) else { return [:] }
        var fields: [String: String] = [:]
        for (name, value) in FormURLEncoding.parse(String(buffer: buffer)) where fields[name] == nil {
            fields[name] = value
        }
        return fields
    }

    func sessionUser(_ request: Request) -> ShinyStore.User? {
        guard let token = request.cookies["shiny_session"]?.value else { return nil }
        return try? store.user(sessionToken: token)
    }

    func addPages(to router: Router<BasicRequestContext>) {
        router.get("/") { _, _ in Self.html(ShinyPages.home()) }
        router.get("/.well-known/change-password") { _, _ in
            Response(status: .found, headers: [.location: "/account/password"])
        }
        router.get("/signup") { _, _ in Self.html(ShinyPages.signUp()) }
        router.post("/signup") { request, _ in
            let form = await Self.form(request)
            let user = (form["user"] ?? "").trimmingCharacters(in: .whitespaces)
            let password = form["password"] ?? ""
            guard !user.isEmpty, !password.isEmpty else {
                return Self.html(ShinyPages.signUp(error: "Choose a user name and a password."), status: .badRequest)
            }
            if let problem = self.ruleProblem(password) {
                return Self.html(ShinyPages.signUp(error: problem), status: .badRequest)
            }
            guard (try? self.store.user(named: user)) == nil else {
                return Self.html(ShinyPages.signUp(error: "This user name is taken."), status: .conflict)
            }
            guard let created = try? self.store.createUser(name: user, password: password, totp: form["totp"] == "1"),
                let token = try? self.store.createSession(for: created.user.id)
            else {
                return Self.html(ShinyPages.signUp(error: "Something went wrong."), status: .internalServerError)
            }
            return Self.redirect(
                "/account",
                headers: [.setCookie: "shiny_session=\(token); Path=/; HttpOnly; SameSite=Lax"]
            )
        }
        router.get("/signin") { _, _ in Self.html(ShinyPages.signIn()) }
        router.post("/signin") { request, _ in
            let form = await Self.form(request)
            let user = form["user"] ?? ""
            let code = form["code"].flatMap { $0.isEmpty ? nil : $0 }
            guard
                let (found, needsCode) = try? self.store.verify(
                    name: user,
                    password: form["password"] ?? "",
                    code: code,
                    useCode: true
                ),
                let found
            else {
                return Self.html(
                    ShinyPages.signIn(error: "Wrong user name or password.", user: user),
                    status: .unauthorized
                )
            }
            if needsCode {
                let message = code == nil ? "Enter the code from your authenticator." : "That code is not right."
                return Self.html(ShinyPages.signIn(error: message, askCode: true, user: user), status: .unauthorized)
            }
            guard let token = try? self.store.createSession(for: found.id) else {
                return Self.html(ShinyPages.signIn(error: "Something went wrong."), status: .internalServerError)
            }
            return Self.redirect(
                "/account",
                headers: [.setCookie: "shiny_session=\(token); Path=/; HttpOnly; SameSite=Lax"]
            )
        }
        router.get("/account") { request, _ in
            guard let user = self.sessionUser(request) else { return Self.redirect("/signin") }
            return Self.html(
                ShinyPages.account(user: user.name, totp: user.totpSecret, linked: user.signInSubject != nil)
            )
        }
        router.get("/account/password") { _, _ in Self.html(ShinyPages.changePassword()) }
        router.post("/account/password") { request, _ in
            let form = await Self.form(request)
            guard
                let (user, needsCode) = try? self.store.verify(
                    name: form["user"] ?? "",
                    password: form["current"] ?? "",
                    code: form["code"].flatMap { $0.isEmpty ? nil : $0 },
                    useCode: true
                ),
                let user
            else {
                return Self.html(
                    ShinyPages.changePassword(message: "The current password is wrong."),
                    status: .unauthorized
                )
            }
            // An account with an authenticator changes its password only with a code too.
            if needsCode {
                return Self.html(
                    ShinyPages.changePassword(message: "Enter the current code from your authenticator."),
                    status: .unauthorized
                )
            }
            let new = form["new"] ?? ""
            if let problem = self.ruleProblem(new) {
                return Self.html(ShinyPages.changePassword(message: problem), status: .badRequest)
            }
            do {
                try self.store.setPassword(new, for: user.id)
            } catch {
                return Self.html(
                    ShinyPages.changePassword(message: "Your password could not be saved; it is unchanged. Try again."),
                    status: .internalServerError
                )
            }
            return Self.html(ShinyPages.changePassword(message: "Your password was changed."))
        }
    }

    func ruleProblem(_ password: String) -> String? {
        let report = PasswordRules(configuration.passwordRules).validate(password)
        return report.isValid ? nil : "This password does not meet shiny's rules: \(report)."
    }

    /// The step-up page Keyhaven opens for TOTP accounts.
    func addStepUp(to router: Router<BasicRequestContext>) {
        router.get("/account-modification/step-up/:id") { _, context in
            let id = context.parameters.get("id") ?? ""
            guard let pending = await self.stepUps.get(id) else {
                return Self.html(ShinyPages.notFound(), status: .notFound)
            }
            return Self.html(ShinyPages.stepUp(id: id, user: pending.user.name))
        }
        router.post("/account-modification/step-up/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            guard let pending = await self.stepUps.get(id), let modification = await self.kit.context(for: id) else {
                return Self.html(ShinyPages.notFound(), status: .notFound)
            }
            let code = (await Self.form(request))["code"] ?? ""
            guard (try? self.store.useCode(code, for: pending.user)) == true else {
                if await self.stepUps.failedAttempt(id) >= 5 {
                    await self.stepUps.close(id)
                    await modification.cancelRequest(
                        withError: .init(code: .failed, localizedFailureReason: "Too many wrong authenticator codes.")
                    )
                    return Self.html(
                        ShinyPages.stepUpDone("Too many wrong codes: nothing was changed.", success: false)
                    )
                }
                return Self.html(
                    ShinyPages.stepUp(id: id, user: pending.user.name, error: "That code is not right."),
                    status: .unauthorized
                )
            }
            await self.stepUps.close(id)
            switch pending.action {
            case .changePassword(let newPassword):
                await self.kit.extension.apply(newPassword, user: pending.user, context: modification)
                return Self.html(ShinyPages.stepUpDone("Your password was changed.", success: true))
            case .convertToSignIn:
                // The rest needs Keyhaven's authorization: finish without holding the page.
                let shinyExtension = self.kit.extension
                Task { await shinyExtension.convert(pending.user, context: modification) }
                return Self.html(
                    ShinyPages.stepUpDone(
                        "Confirmed: Keyhaven finishes the switch to Sign in with Keyhaven.",
                        success: true
                    )
                )
            }
        }
        router.post("/account-modification/step-up/:id/cancel") { _, context in
            let id = context.parameters.get("id") ?? ""
            guard await self.stepUps.get(id) != nil, let modification = await self.kit.context(for: id) else {
                return Self.html(ShinyPages.notFound(), status: .notFound)
            }
            await self.stepUps.close(id)
            await modification.cancelRequest(withError: .init(code: .userCanceled))
            return Self.html(ShinyPages.stepUpDone("Cancelled: nothing was changed.", success: false))
        }
    }
}
