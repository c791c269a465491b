import AsyncHTTPClient
import Foundation
import IdentityProvider
import IdentityProviderPostgres
import IdentityProviderServer
import IdentityProviderTestSupport
import KeyhavenTesting
import Logging
import NIOCore
import NIOHTTP1
import OneTimeCodes
import Testing
import UpgradeHTTP

/// Wrong sign-in guesses are limited per account and per client address, on both engines.
@Suite(.offCooperativePool)
struct SignInThrottleTests {
    static let email = "ada@example.com"
    /// PostgreSQL's pool logs connection attempts a shutdown cancels at `info`.
    static let quiet: Logger = {
        var logger = Logger(label: "test.idp.postgres")
        logger.logLevel = .error
        return logger
    }()
    static let password = "correct horse battery"

    /// A provider with one person on `engine`, its clock under the test's control.
    static func provider(
        engine: String = "sqlite",
        _ adjust: (inout ProviderConfiguration) -> Void = { _ in }
    ) async throws -> (IdentityProvider, TestNow, totpSecret: String?) {
        let clock = TestNow()
        var configuration = ProviderHarness.configuration()
        configuration.now = { clock.now }
        adjust(&configuration)
        let database: any SQLDatabase =
            engine == "postgres"
            ? try TestPostgres.database(url: try await TestPostgres.freshDatabase(), logger: quiet)
            : try SQLiteDatabase()
        let provider = try await IdentityProvider(configuration: configuration, database: database)
        _ = try await provider.createUser(email: email, password: password)
        let (_, secret) = try await provider.createUser(email: "grace@example.com", password: password, totp: true)
        return (provider, clock, secret)
    }

    /// The error `attempt` throws, or nil when it succeeds.
    static func failure(_ attempt: () async throws -> Authentication) async -> ProviderError? {
        do {
            _ = try await attempt()
            return nil
        } catch let error as ProviderError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    /// `times` wrong passwords for Ada.
    static func guessWrong(_ provider: IdentityProvider, times: Int) async {
        for _ in 0..<times {
            _ = await failure { try await provider.authenticate(email: email, password: "x", code: nil) }
        }
    }

    /// Whether Ada's right password signs her in now.
    static func adaSignsIn(_ provider: IdentityProvider) async -> Bool {
        await failure { try await provider.authenticate(email: email, password: password, code: nil) } == nil
    }

    /// What Ada's right password, from `address`, fails with (nil: she is signed in).
    static func ada(_ provider: IdentityProvider, from address: String) async -> ProviderError? {
        await failure { try await provider.authenticate(email: email, password: password, code: nil, from: address) }
    }

    static var engines: [String] {
        TestPostgres.baseURL == nil ? ["sqlite"] : ["sqlite", "postgres"]
    }

    @Test func lockoutsDoubleUpToTheCap() {
        let policy = SignInThrottle.account
        #expect((1...4).map { policy.lockout(afterFailures: $0) } == [0, 0, 0, 0])
        #expect((5...9).map { policy.lockout(afterFailures: $0) } == [30_000, 60_000, 120_000, 240_000, 480_000])
        #expect(policy.lockout(afterFailures: 10) == 900_000)
        #expect(policy.lockout(afterFailures: 10_000) == 900_000)
        #expect(SignInThrottle.unlimited.lockout(afterFailures: .max) == 0)
    }

    @Test(arguments: engines)
    func fiveWrongPasswordsLockTheAccountEvenAgainstTheRightOne(engine: String) async throws {
        let (provider, clock, _) = try await Self.provider(engine: engine)
        defer { Task { await provider.database.shutdown() } }
        for _ in 1...5 {
            let error = await Self.failure {
                try await provider.authenticate(email: Self.email, password: "wrong password", code: nil)
            }
            #expect(error?.code == .invalidCredentials)
        }
        // Locked: the right password is not even checked.
        let locked = await Self.failure {
            try await provider.authenticate(email: Self.email, password: Self.password, code: nil)
        }
        #expect(locked?.code == .tooManyAttempts)
        #expect(locked?.retryAfter == 30)
        #expect(locked?.message == "Too many sign-in attempts. Try again in 30 seconds.")
        // Differently cased, the same account.
        let cased = await Self.failure {
            try await provider.authenticate(email: "ADA@example.com", password: Self.password, code: nil)
        }
        #expect(cased?.code == .tooManyAttempts)

        clock.advance(31)
        // One more wrong guess after the lockout doubles it.
        let sixth = await Self.failure {
            try await provider.authenticate(email: Self.email, password: "wrong again", code: nil)
        }
        #expect(sixth?.code == .invalidCredentials)
        let longer = await Self.failure {
            try await provider.authenticate(email: Self.email, password: Self.password, code: nil)
        }
        #expect(longer?.retryAfter == 60)
        #expect(longer?.message == "Too many sign-in attempts. Try again in 1 minute.")

        clock.advance(61)
        let user = try await provider.authenticate(email: Self.email, password: Self.password, code: nil)
        #expect(try await provider.user(email: Self.email)?.id == user.userId)
        // Success cleared the count: four more wrong guesses do not lock.
        await Self.guessWrong(provider, times: 4)
        #expect(await Self.adaSignsIn(provider))
    }

    @Test(arguments: engines)
    func unknownAddressesLockTheSameWay(engine: String) async throws {
        let (provider, _, _) = try await Self.provider(engine: engine)
        defer { Task { await provider.database.shutdown() } }
        var codes: [ProviderError.Code?] = []
        for _ in 1...6 {
            codes.append(
                await Self.failure {
                    try await provider.authenticate(email: "nobody@example.com", password: "guess", code: nil)
                }?.code
            )
        }
        #expect(codes == Array(repeating: .invalidCredentials, count: 5) + [.tooManyAttempts])
        // Others are not affected.
        #expect(await Self.adaSignsIn(provider))
    }

    /// Attempts are counted as they arrive: a burst of concurrent guesses gets exactly the allowed
    /// number through, not one per connection.
    @Test(arguments: engines)
    func aBurstOfConcurrentGuessesIsCountedAsItArrives(engine: String) async throws {
        let (provider, _, _) = try await Self.provider(engine: engine)
        defer { Task { await provider.database.shutdown() } }
        let codes = await withTaskGroup(of: ProviderError.Code?.self) { group in
            for index in 0..<20 {
                group.addTask {
                    await Self.failure {
                        try await provider.authenticate(email: Self.email, password: "guess \(index)", code: nil)
                    }?.code
                }
            }
            var codes: [ProviderError.Code?] = []
            for await code in group { codes.append(code) }
            return codes
        }
        #expect(codes.filter { $0 == .invalidCredentials }.count == 5)
        #expect(codes.filter { $0 == .tooManyAttempts }.count == 15)
    }

    /// A day without wrong guesses clears an account's count; fifteen minutes do not.
    @Test func quietAccountsAreForgiven() async throws {
        let (provider, clock, _) = try await Self.provider()
        await Self.guessWrong(provider, times: 4)
        clock.advance(24 * 3600 + 1)
        await Self.guessWrong(provider, times: 4)
        #expect(await Self.adaSignsIn(provider))
    }

    @Test func wrongOneTimeCodesCountToo() async throws {
        let (provider, clock, secret) = try await Self.provider()
        let totp = try TOTP(secret: try #require(secret))
        let right = totp.code(at: clock.now)
        let wrong = right == "000000" ? "111111" : "000000"
        // The right password without a code is not a failure.
        for _ in 1...6 {
            let error = await Self.failure {
                try await provider.authenticate(email: "grace@example.com", password: Self.password, code: nil)
            }
            #expect(error?.code == .secondFactorRequired)
        }
        for _ in 1...5 {
            let error = await Self.failure {
                try await provider.authenticate(email: "grace@example.com", password: Self.password, code: wrong)
            }
            #expect(error?.code == .invalidCredentials)
        }
        let locked = await Self.failure {
            try await provider.authenticate(email: "grace@example.com", password: Self.password, code: right)
        }
        #expect(locked?.code == .tooManyAttempts)
    }

    /// RFC 6238 §5.2: a code that signed someone in does not work a second time, nor does an
    /// older one; the next step's code does.
    @Test(arguments: engines)
    func aOneTimeCodeWorksOnce(engine: String) async throws {
        let (provider, clock, secret) = try await Self.provider(engine: engine)
        defer { Task { await provider.database.shutdown() } }
        let totp = try TOTP(secret: try #require(secret))
        let email = "grace@example.com"
        let first = totp.code(at: clock.now)
        _ = try await provider.authenticate(email: email, password: Self.password, code: first)
        let replayed = await Self.failure {
            try await provider.authenticate(email: email, password: Self.password, code: first)
        }
        #expect(replayed?.code == .invalidCredentials)
        #expect(replayed?.message == "That code was already used. Wait for the next one.")
        clock.advance(30)
        // The previous step is still inside the drift window, but older than the one used.
        let previous = await Self.failure {
            try await provider.authenticate(
                email: email,
                password: Self.password,
                code: totp.code(at: clock.now.addingTimeInterval(-60))
            )
        }
        #expect(previous?.code == .invalidCredentials)
        _ = try await provider.authenticate(email: email, password: Self.password, code: totp.code(at: clock.now))
    }

    @Test func oneAddressGuessingManyAccountsIsLocked() async throws {
        let (provider, _, _) = try await Self.provider { configuration in
            configuration.addressThrottle.allowedFailures = 3
        }
        for index in 1...3 {
            let error = await Self.failure {
                try await provider.authenticate(
                    email: "person\(index)@example.com",
                    password: "guess",
                    code: nil,
                    from: "203.0.113.9"
                )
            }
            #expect(error?.code == .invalidCredentials)
        }
        let fromThere = await Self.ada(provider, from: "203.0.113.9")
        #expect(fromThere?.code == .tooManyAttempts)
        // The same person from elsewhere is fine, and a good password does not reset the address.
        #expect(await Self.ada(provider, from: "198.51.100.4") == nil)
        let stillLocked = await Self.ada(provider, from: "203.0.113.9")
        #expect(stillLocked?.code == .tooManyAttempts)
    }

    /// IPv6 clients count by their /64: hopping within it does not escape the address limit.
    @Test func ipv6AddressesCountByTheirSlash64() async throws {
        let (provider, _, _) = try await Self.provider { configuration in
            configuration.addressThrottle.allowedFailures = 2
        }
        for (index, address) in ["2001:db8:1:2::1", "2001:db8:1:2:ffff::9"].enumerated() {
            _ = await Self.failure {
                try await provider.authenticate(email: "p\(index)@example.com", password: "x", code: nil, from: address)
            }
        }
        let sameNetwork = await Self.ada(provider, from: "2001:db8:1:2::77")
        #expect(sameNetwork?.code == .tooManyAttempts)
        #expect(await Self.ada(provider, from: "2001:db8:1:3::1") == nil)
    }

    /// Instances sharing PostgreSQL count together: concurrent wrong guesses are all counted.
    @Test(.enabled(if: TestPostgres.baseURL != nil, "set KEYHAVEN_TEST_POSTGRES_URL (scripts/test.sh does)"))
    func concurrentGuessesOnTwoInstancesAreAllCounted() async throws {
        let url = try await TestPostgres.freshDatabase()
        let clock = TestNow()
        var configuration = ProviderHarness.configuration()
        configuration.now = { clock.now }
        configuration.accountThrottle.allowedFailures = 12
        let first = try await IdentityProvider(
            configuration: configuration,
            database: try TestPostgres.database(url: url, logger: Self.quiet)
        )
        let second = try await IdentityProvider(
            configuration: configuration,
            database: try TestPostgres.database(url: url, logger: Self.quiet)
        )
        _ = try await first.createUser(email: Self.email, password: Self.password)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<12 {
                let provider = index.isMultiple(of: 2) ? first : second
                group.addTask {
                    _ = try? await provider.authenticate(email: Self.email, password: "guess \(index)", code: nil)
                }
            }
            try await group.waitForAll()
        }
        let locked = await Self.failure {
            try await second.authenticate(email: Self.email, password: Self.password, code: nil)
        }
        #expect(locked?.code == .tooManyAttempts)
        #expect(locked?.retryAfter == 30)
        await first.database.shutdown()
        await second.database.shutdown()
    }

    /// Behind a trusted proxy the address it appended counts (not what the client put further left);
    /// with no trusted proxy the header is ignored and the peer counts.
    @Test(arguments: [true, false])
    func forwardedAddressesAreBelievedOnlyFromTrustedProxies(trusted: Bool) async throws {
        var configuration = ProviderHarness.configuration()
        configuration.addressThrottle.allowedFailures = 2
        let proxies: Set<String> = trusted ? ["127.0.0.1", "::1"] : []
        let server: @Sendable (IdentityProvider) -> ProviderServer = {
            ProviderServer(provider: $0, clientAddressHeader: "X-Forwarded-For", trustedProxies: proxies)
        }
        try await ProviderHarness.with(configuration, server: server) { harness in
            func signIn(_ email: String, _ password: String, forwarded: String) async throws -> Int {
                var request = HTTPClientRequest(url: harness.baseURL + "/keyhaven/v1/login")
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                request.headers.add(name: "X-Forwarded-For", value: forwarded)
                request.body = .bytes(ByteBuffer(string: #"{"email":"\#(email)","password":"\#(password)"}"#))
                return Int(try await HTTPClient.shared.execute(request, timeout: .seconds(30)).status.code)
            }
            // Two wrong guesses "from" 198.51.100.7, each claiming another origin further left.
            #expect(try await signIn("p1@example.com", "x", forwarded: "10.0.0.1, 198.51.100.7") == 401)
            #expect(try await signIn("p2@example.com", "x", forwarded: "10.0.0.2, 198.51.100.7") == 401)
            let fromThere = try await signIn(harness.email, harness.password, forwarded: "198.51.100.7")
            let fromElsewhere = try await signIn(harness.email, harness.password, forwarded: "203.0.113.5")
            if trusted {
                #expect(fromThere == 429)
                #expect(fromElsewhere == 200)
            } else {
                // Everything counted against the peer (127.0.0.1), whatever the header said.
                #expect(fromThere == 429 && fromElsewhere == 429)
            }
        }
    }

    /// Over HTTP: the pages answer 429 with the message and `Retry-After`; so does the device API.
    @Test func httpAnswersTooManyRequests() async throws {
        let clock = TestNow()
        var configuration = ProviderHarness.configuration()
        configuration.accountThrottle.allowedFailures = 2
        configuration.now = { clock.now }  // stopped, so the seconds to wait are exactly 30
        try await ProviderHarness.with(configuration) { harness in
            let web = WebSession()
            _ = try await web.get(harness.baseURL + "/account")
            var statuses: [Int] = []
            var last: WebSession.Page?
            for password in ["wrong one", "wrong two", harness.password] {
                let page = try await web.post(
                    harness.baseURL + "/account/signin",
                    fields: ["email": harness.email, "password": password]
                )
                statuses.append(page.status)
                last = page
            }
            #expect(statuses == [401, 401, 429])
            #expect(last?.headers.first(name: "Retry-After") == "30")
            #expect(last?.body.contains("Too many sign-in attempts. Try again in 30 seconds.") == true)

            var request = HTTPClientRequest(url: harness.baseURL + "/keyhaven/v1/login")
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(
                ByteBuffer(string: #"{"email":"\#(harness.email)","password":"\#(harness.password)"}"#)
            )
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
            #expect(response.status.code == 429)
            #expect(response.headers.first(name: "Retry-After") == "30")
            #expect(body.contains(#""error":"too_many_attempts""#))
        }
    }
}
