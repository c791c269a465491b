import AccountModification
import AccountModificationKit
public import Foundation
import HTTPTypes
public import Hummingbird
import Logging
import NIOCore
import OneTimeCodes
import PasswordRules
import Synchronization
public import _KeyhavenSupport
public import _KeyhavenWeb

@_exported public import struct _KeyhavenSupport.KeyhavenError

/// shiny's settings.
public struct ShinyConfiguration: Sendable {
    public var host: String
    public var port: Int
    /// Where people and Keyhaven reach shiny (`https://shiny.example`): the origin of its manifest's
    /// endpoint and step-up pages, and the one origin its forms accept. `nil`: the origin shiny
    /// listens on. Never taken from a request's `Host` or `X-Forwarded-*` headers.
    public var publicURL: String?
    /// The SQLite file of users; `nil` keeps them in memory.
    public var databasePath: String?
    /// scrypt cost for password hashes: N = 2^scryptLogN, r = 8, p = 1.
    public var scryptLogN: Int
    /// The password rules shiny enforces and publishes in its manifest.
    public var passwordRules: String
    /// The guessing limit per account (sign-in, change-password, the step-up page's codes, and the
    /// current password the account-modification extension checks).
    public var accountThrottle: ThrottlePolicy
    /// The guessing limit per client address.
    public var addressThrottle: ThrottlePolicy
    /// The clock of the guessing limits (tests move it).
    public var now: @Sendable () -> Date
    /// Test hook: shiny stores (and reports) this password instead of the one Keyhaven sent.
    public var substitutePassword: (@Sendable (String) -> String)?
    /// For `keyhaven demo` only: also serve `/api/demo/…`, which shows any account's status and the
    /// notifications shiny received to whoever asks. Never on in a service people use; shiny
    /// refuses it unless it listens on loopback.
    public var demo: Bool

    public init(
        host: String = "127.0.0.1",
        port: Int = 8081,
        publicURL: String? = nil,
        databasePath: String? = nil,
        scryptLogN: Int = 13,
        passwordRules: String =
            "required: lower; required: upper; required: digit; allowed: [-_.!]; minlength: 12; maxlength: 64;",
        accountThrottle: ThrottlePolicy = .account,
        addressThrottle: ThrottlePolicy = .address,
        now: @escaping @Sendable () -> Date = { Date() },
        substitutePassword: (@Sendable (String) -> String)? = nil,
        demo: Bool = false
    ) {
        self.accountThrottle = accountThrottle
        self.addressThrottle = addressThrottle
        self.now = now
        self.host = host
        self.port = port
        self.publicURL = publicURL
        self.databasePath = databasePath
        self.scryptLogN = scryptLogN
        self.passwordRules = passwordRules
        self.substitutePassword = substitutePassword
        self.demo = demo
    }
}

/// shiny's public origin: configured, or where it listens (known once it binds its port).
final class PublicOrigin: Sendable {
    let configured: String?
    let fallback: String
    private let bound = Mutex<String?>(nil)

    init(_ configuration: ShinyConfiguration) {
        configured = configuration.publicURL.map { url in
            var url = url
            while url.hasSuffix("/") { url.removeLast() }
            return url
        }
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        fallback = "http://\(host):\(configuration.port)"
    }

    var current: String { configured ?? bound.withLock { $0 } ?? fallback }

    func listening(at origin: String) { bound.withLock { $0 = origin } }

    /// Whether cookies must be `Secure` (pages served over https).
    var isSecure: Bool { current.hasPrefix("https://") }
}

/// A configuration shiny cannot run with.
public typealias ShinyConfigurationError = KeyhavenError<ShinyConfigurationErrorDomain>

/// The domain of ``ShinyConfigurationError``.
public enum ShinyConfigurationErrorDomain: KeyhavenErrorDomain {}

extension ShinyConfigurationError.Code {
    /// The demo endpoints were asked for on an address other than loopback.
    public static var demoOffLoopback: Self { Self("demoOffLoopback") }
}

/// shiny: an example service a developer would copy — accounts with scrypt-hashed passwords and
/// optional TOTP, sign-up and sign-in pages, `/.well-known/change-password`, and Keyhaven's
/// account-modification extension (one-tap strong passwords, with a step-up page for TOTP accounts).
public final class Shiny: Sendable {
    public let configuration: ShinyConfiguration
    let store: ShinyStore
    let stepUps = StepUps()
    let signIn = ShinySignIn()
    let passkeys: ShinyPasskeys
    let throttle: ShinyThrottle
    let kit: AccountModificationKit<ShinyExtension>
    let publicOrigin: PublicOrigin

    /// Where people and Keyhaven reach shiny: ``ShinyConfiguration/publicURL``, else where it
    /// listens (else, before it listens, its configured host and port).
    public var origin: String { publicOrigin.current }

    public init(configuration: ShinyConfiguration = ShinyConfiguration()) throws {
        if configuration.demo, ServiceOrigin(scheme: .http, host: configuration.host)?.isLoopback != true {
            throw ShinyConfigurationError(
                .demoOffLoopback,
                "shiny's demo endpoints are served on loopback only, not on \(configuration.host)"
            )
        }
        self.configuration = configuration
        throttle = ShinyThrottle(
            account: configuration.accountThrottle,
            address: configuration.addressThrottle,
            now: configuration.now
        )
        store = try ShinyStore(path: configuration.databasePath, scryptLogN: configuration.scryptLogN)
        let rules = PasswordRules(configuration.passwordRules)
        let signIn = self.signIn
        let requirements = PasswordRules.canonical(configuration.passwordRules)
        let publicOrigin = PublicOrigin(configuration)
        self.publicOrigin = publicOrigin
        let passkeys = ShinyPasskeys(
            store: store,
            challenges: PasskeyChallenges(),
            publicOrigin: publicOrigin,
            now: configuration.now
        )
        self.passkeys = passkeys
        kit = AccountModificationKit(
            extension: ShinyExtension(
                store: store,
                throttle: throttle,
                rules: rules,
                stepUps: stepUps,
                signIn: signIn,
                passkeys: passkeys,
                substitute: configuration.substitutePassword
            ),
            manifest: {
                let provider = signIn.configured?.configuration
                return AccountModificationManifest(
                    endpoint: AccountModificationKit<ShinyExtension>.basePath,
                    supportsStrongPasswordChange: true,
                    supportsUpgradeToSignIn: provider != nil,
                    passwordGenerationRequirements: requirements,
                    signIn: provider.map { SignInConfiguration(issuer: $0.issuer, clientId: $0.clientId) },
                    supportsUpgradeToPasskey: passkeys.available
                )
            },
            origin: { publicOrigin.current },
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
            onServerRunning: { channel in
                let origin = "http://\(host):\(channel.localAddress?.port ?? port)"
                self.publicOrigin.listening(at: origin)
                await onReady(origin)
            },
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

    public func router() -> Router<ShinyRequestContext> {
        // Every route answers with the security headers (`_KeyhavenWeb`'s middleware comes first).
        let router = Router(
            context: ShinyRequestContext.self,
            securityHeaders: Self.securityHeaders,
            assets: Self.assets
        )
        kit.addRoutes(to: router)
        addPages(to: router)
        addAPI(to: router)
        addStepUp(to: router)
        addSignIn(to: router)
        addPasskeys(to: router)
        if configuration.demo { addDemo(to: router) }
        return router
    }

    /// 303 See Other (`_KeyhavenWeb`'s one redirect rule: after a form post, the browser follows
    /// with a GET and never posts the form again).
    static func redirect(_ location: String, headers: HTTPFields = [:]) -> Response {
        Redirect(to: location, headers: headers).response
    }

    func sessionUser(_ request: Request) -> ShinyStore.User? {
        guard let token = request.cookies[Self.sessionCookie]?.value else { return nil }
        return try? store.user(sessionToken: token)
    }

    func addPages(to router: Router<ShinyRequestContext>) {
        router.get("/") { _, _ in Self.html(ShinyPages.home()) }
        router.get("/.well-known/change-password") { _, _ in Self.redirect("/account/password") }
        router.get("/signup") { request, _ in
            self.formPage(request) { ShinyPages.signUp(csrf: $0) }
        }
        postForm("/signup", to: router) { request, _, form in
            let csrf = form["csrf"] ?? ""
            let user = (form["user"] ?? "").trimmingCharacters(in: .whitespaces)
            let password = form["password"] ?? ""
            guard !user.isEmpty, !password.isEmpty else {
                return Self.html(
                    ShinyPages.signUp(csrf: csrf, error: "Choose a user name and a password."),
                    status: .badRequest
                )
            }
            if let problem = self.ruleProblem(password) {
                return Self.html(ShinyPages.signUp(csrf: csrf, error: problem), status: .badRequest)
            }
            guard (try? self.store.user(named: user)) == nil else {
                return Self.html(ShinyPages.signUp(csrf: csrf, error: "This user name is taken."), status: .conflict)
            }
            guard let created = try? self.store.createUser(name: user, password: password, totp: form["totp"] == "1"),
                let token = try? self.store.createSession(for: created.user.id)
            else {
                return Self.html(
                    ShinyPages.signUp(csrf: csrf, error: "Something went wrong."),
                    status: .internalServerError
                )
            }
            return Self.redirect("/account", headers: self.sessionCookieHeader(token))
        }
        router.get("/signin") { request, _ in
            self.formPage(request) { ShinyPages.signIn(csrf: $0) }
        }
        postForm("/signin", to: router) { request, context, form in
            let csrf = form["csrf"] ?? ""
            let user = form["user"] ?? ""
            let code = form["code"].flatMap { $0.isEmpty ? nil : $0 }
            let outcome: Verification
            do throws(ShinyThrottle.Locked) {
                outcome = try self.verify(
                    user: user,
                    password: form["password"] ?? "",
                    code: code,
                    address: Self.clientAddress(context)
                )
            } catch {
                return Self.tooMany(error) { ShinyPages.signIn(csrf: csrf, error: $0, user: user) }
            }
            switch outcome {
            case .wrong:
                return Self.html(
                    ShinyPages.signIn(csrf: csrf, error: "Wrong user name or password.", user: user),
                    status: .unauthorized
                )
            case .needsCode:
                let message = code == nil ? "Enter the code from your authenticator." : "That code is not right."
                return Self.html(
                    ShinyPages.signIn(csrf: csrf, error: message, askCode: true, user: user),
                    status: .unauthorized
                )
            case .verified(let found):
                guard let token = try? self.store.createSession(for: found.id) else {
                    return Self.html(
                        ShinyPages.signIn(csrf: csrf, error: "Something went wrong."),
                        status: .internalServerError
                    )
                }
                return Self.redirect("/account", headers: self.sessionCookieHeader(token))
            }
        }
        router.get("/account") { request, _ in
            guard let user = self.sessionUser(request) else { return Self.redirect("/signin") }
            return Self.html(
                ShinyPages.account(user: user.name, totp: user.totpSecret, linked: user.signInSubject != nil)
            )
        }
        router.get("/account/password") { request, _ in
            self.formPage(request) { ShinyPages.changePassword(csrf: $0) }
        }
        postForm("/account/password", to: router) { request, context, form in
            let csrf = form["csrf"] ?? ""
            let outcome: Verification
            do throws(ShinyThrottle.Locked) {
                outcome = try self.verify(
                    user: form["user"] ?? "",
                    password: form["current"] ?? "",
                    code: form["code"].flatMap { $0.isEmpty ? nil : $0 },
                    address: Self.clientAddress(context)
                )
            } catch {
                return Self.tooMany(error) { ShinyPages.changePassword(csrf: csrf, message: $0) }
            }
            let user: ShinyStore.User
            switch outcome {
            case .wrong:
                return Self.html(
                    ShinyPages.changePassword(csrf: csrf, message: "The current password is wrong."),
                    status: .unauthorized
                )
            case .needsCode:
                // An account with an authenticator changes its password only with a code too.
                return Self.html(
                    ShinyPages.changePassword(csrf: csrf, message: "Enter the current code from your authenticator."),
                    status: .unauthorized
                )
            case .verified(let verified):
                user = verified
            }
            let new = form["new"] ?? ""
            if let problem = self.ruleProblem(new) {
                return Self.html(ShinyPages.changePassword(csrf: csrf, message: problem), status: .badRequest)
            }
            do {
                try self.store.setPassword(new, for: user.id)
            } catch {
                return Self.html(
                    ShinyPages.changePassword(
                        csrf: csrf,
                        message: "Your password could not be saved; it is unchanged. Try again."
                    ),
                    status: .internalServerError
                )
            }
            return Self.html(ShinyPages.changePassword(csrf: csrf, message: "Your password was changed."))
        }
    }

    func ruleProblem(_ password: String) -> String? {
        let report = PasswordRules(configuration.passwordRules).validate(password)
        return report.isValid ? nil : "This password does not meet shiny's rules: \(report)."
    }

    /// What a password (and code) check found.
    enum Verification {
        case wrong
        /// The password is right; the account's authenticator code is missing or wrong.
        case needsCode
        case verified(ShinyStore.User)
    }

    /// Checks `user`'s password (and code, used up when right) under the guessing limits.
    /// - Throws: ``ShinyThrottle/Locked`` while the account or the address is locked; nothing is
    ///   checked then.
    func verify(
        user: String,
        password: String,
        code: String?,
        address: String?
    ) throws(ShinyThrottle.Locked)
        -> Verification
    {
        try guarded(account: user, address: address, codeGiven: code != nil) {
            try store.verify(name: user, password: password, code: code, useCode: true)
        }
    }

    /// Runs a password check charged to `account` and `address`; refunds what was not a wrong guess.
    func guarded(
        account: String,
        address: String?,
        codeGiven: Bool,
        _ check: () throws -> (user: ShinyStore.User?, needsCode: Bool)
    ) throws(ShinyThrottle.Locked) -> Verification {
        let keys = throttle.keys(account: account, address: address)
        try throttle.charge(keys)
        guard let (user, needsCode) = try? check(), let user else { return .wrong }
        if !needsCode {
            throttle.refund(keys, succeeded: true)
            return .verified(user)
        }
        if !codeGiven { throttle.refund(keys, succeeded: false) }  // the right password, the code still to come
        return .needsCode
    }
}
