import Foundation
import Synchronization
import Vault
import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// shiny, the example service, run by `keyhaven demo` as a process of its own — as a person runs a
/// service — and reached only over HTTP: its sign-up and sign-in API, and the `/api/demo/…` status
/// endpoints it serves with `--demo`.
///
/// ``run(_:arguments:_:)`` stops it on every way out (SIGTERM, then SIGKILL if it lingers). shiny
/// also runs with `--stop-when-stdin-closes` on a pipe only this process holds, so it stops even
/// when `keyhaven` itself is killed.
final class ShinyProcess {
    /// Where shiny listens (`http://127.0.0.1:PORT`).
    let origin: String
    private let process: Process
    /// The write end of shiny's standard input: shiny stops when it closes.
    private let input: Pipe
    private let output: OutputLog

    /// The environment variable that names the `shiny` executable (tests, packagers).
    static let environmentVariable = "KEYHAVEN_SHINY"

    private init(origin: String, process: Process, input: Pipe, output: OutputLog) {
        self.origin = origin
        self.process = process
        self.input = input
        self.output = output
    }

    var pid: Int32 { process.processIdentifier }

    // MARK: Finding and running shiny

    /// The `shiny` executable: `$KEYHAVEN_SHINY`, else the one next to the running `keyhaven` (where
    /// `swift build` puts both).
    static func locate(environment: [String: String] = CommandIO.current.environment) throws -> URL {
        if let path = environment[environmentVariable], !path.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw Output.failure(
                    "\(environmentVariable)=\(path) is not an executable file: build shiny with `swift build --product shiny`"
                )
            }
            return URL(fileURLWithPath: path)
        }
        let folders = executableFolders()
        for folder in folders {
            let candidate = folder.appendingPathComponent("shiny")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw Output.failure(
            """
            the demo runs the example service `shiny`, which is not next to keyhaven (looked in \
            \(folders.map(\.path).joined(separator: ", "))). Build it with `swift build --product shiny` \
            (or set \(environmentVariable) to its path)
            """
        )
    }

    /// The folders `keyhaven` runs from: its real location (`/proc/self/exe` on Linux) and the one
    /// it was started as (`argv[0]`, through a symbolic link perhaps).
    static func executableFolders() -> [URL] {
        var folders: [URL] = []
        if let real = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            folders.append(URL(fileURLWithPath: real).deletingLastPathComponent())
        }
        let invoked = CommandLine.arguments[0]
        if invoked.contains("/") {
            let url = URL(fileURLWithPath: invoked)
            for folder in [url.resolvingSymlinksInPath().deletingLastPathComponent(), url.deletingLastPathComponent()]
            where !folders.contains(where: { $0.standardizedFileURL == folder.standardizedFileURL }) {
                folders.append(folder)
            }
        } else if let path = CommandIO.current.environment["PATH"] {
            for folder in path.split(separator: ":").map({ URL(fileURLWithPath: String($0)) })
            where FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent(invoked).path) {
                folders.append(
                    folder.appendingPathComponent(invoked).resolvingSymlinksInPath().deletingLastPathComponent()
                )
                break
            }
        }
        return folders
    }

    /// Starts `executable` with `arguments` (which must include `--port 0 --stop-when-stdin-closes`),
    /// waits for its `shiny listening on ORIGIN` line, runs `body`, and stops shiny whether `body`
    /// returns or throws.
    static func run<T>(
        _ executable: URL,
        arguments: [String],
        _ body: (ShinyProcess) async throws -> T
    ) async throws -> T {
        let shiny = try await start(executable, arguments: arguments)
        let result: T
        do {
            result = try await body(shiny)
        } catch {
            await shiny.stop()
            throw error
        }
        await shiny.stop()
        return result
    }

    static func start(_ executable: URL, arguments: [String]) async throws -> ShinyProcess {
        let launched: Launched
        do {
            launched = try await launch(executable, arguments: arguments)
        } catch {
            throw Output.failure("could not start \(executable.path): \(error)")
        }
        let (process, input) = (launched.process, launched.input)
        let output = OutputLog()
        output.drain(launched.standardOutput, standardOutput: true)
        output.drain(launched.standardError, standardOutput: false)

        let prefix = "shiny listening on "
        let first = await output.firstLine(timeout: .seconds(30))
        guard let first, first.hasPrefix(prefix), let origin = Optional(String(first.dropFirst(prefix.count))),
            origin.hasPrefix("http://")
        else {
            await stop(process, input: input)
            let said = output.standardError.trimmingCharacters(in: .whitespacesAndNewlines)
            throw Output.failure(
                """
                shiny (\(executable.path)) did not start\(first.map { ": it said \"\($0)\"" } ?? "")\
                \(said.isEmpty ? "" : "\n\(said)")
                """
            )
        }
        return ShinyProcess(origin: origin, process: process, input: input, output: output)
    }

    /// A started process and its pipes.
    private struct Launched {
        var process: Process
        var input: Pipe
        var standardOutput: FileHandle
        var standardError: FileHandle
    }

    /// Starts the process from a thread of its own whose signal mask is empty, as a shell starts
    /// one: a child inherits the mask of the thread that starts it, and Swift concurrency's threads
    /// block SIGTERM, which would leave anything but shiny's own runtime deaf to it.
    private static func launch(_ executable: URL, arguments: [String]) async throws -> Launched {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                var none = sigset_t()
                sigemptyset(&none)
                pthread_sigmask(SIG_SETMASK, &none, nil)
                let process = Process()
                process.executableURL = executable
                process.arguments = arguments
                let input = Pipe()
                let standardOutput = Pipe()
                let standardError = Pipe()
                process.standardInput = input
                process.standardOutput = standardOutput
                process.standardError = standardError
                do {
                    try process.run()
                    continuation.resume(
                        returning: Launched(
                            process: process,
                            input: input,
                            standardOutput: standardOutput.fileHandleForReading,
                            standardError: standardError.fileHandleForReading
                        )
                    )
                } catch {
                    continuation.resume(throwing: error)
                }
            }.start()
        }
    }

    /// Stops shiny: closes its standard input and sends SIGTERM (either stops it gracefully), waits,
    /// and kills it if it is still running after 5 seconds.
    func stop() async {
        await Self.stop(process, input: input)
    }

    private static func stop(_ process: Process, input: Pipe) async {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        while process.isRunning {
            if clock.now >= deadline {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                break
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    // MARK: shiny's API

    /// The body of shiny's API errors.
    struct Problem: Decodable {
        var error: String
        var message: String
    }

    /// One call to shiny's API, `what` the demo is doing (for the failure): a success is decoded as
    /// `T`, a status in `accepted` is returned without a value, any other answer is a failure
    /// saying what shiny answered.
    private func call<T: Decodable>(
        _ what: String,
        accepting accepted: Set<Int> = [],
        as type: T.Type,
        _ send: () async throws -> DemoHTTP.Reply
    ) async throws -> (status: Int, value: T?) {
        let reply: DemoHTTP.Reply
        do {
            reply = try await send()
        } catch {
            throw Output.failure("could not reach shiny at \(origin) to \(what): \(error)")
        }
        guard reply.succeeded || accepted.contains(reply.status) else {
            let problem = try? reply.decode(Problem.self)
            throw Output.failure(
                "shiny refused to \(what): \(problem.map { "\($0.message) (\($0.error))" } ?? "HTTP \(reply.status)")"
            )
        }
        guard reply.succeeded else { return (reply.status, nil) }
        do {
            return (reply.status, try reply.decode(T.self))
        } catch {
            throw Output.failure("shiny's answer when asked to \(what) is not what the demo expects: \(error)")
        }
    }

    /// What the vault keeps for `user`'s account on shiny (its sign-in page is the service).
    func credential(user: String, password: String, totp: String? = nil) -> CredentialContent {
        CredentialContent(
            title: "shiny (\(user))",
            services: [.init("\(origin)/signin")],
            user: user,
            password: password,
            totp: totp
        )
    }

    /// Creates an account with a password through `POST /api/signup`.
    func signUp(user: String, password: String) async throws {
        _ = try await createAccount(user: user, password: password, authenticator: false)
    }

    /// Creates an account protected by an authenticator too; returns the authenticator's secret,
    /// which shiny shows this once (as an enrolment page shows its QR code).
    func signUpWithAuthenticator(user: String, password: String) async throws -> String {
        guard let secret = try await createAccount(user: user, password: password, authenticator: true) else {
            throw Output.failure("shiny did not give \(user) an authenticator secret")
        }
        return secret
    }

    private func createAccount(user: String, password: String, authenticator: Bool) async throws -> String? {
        struct Body: Encodable {
            var user: String
            var password: String
            var totp: Bool
        }
        struct Created: Decodable { var totpSecret: String? }
        let body = Body(user: user, password: password, totp: authenticator)
        return try await call("create \(user)'s account", as: Created.self) {
            try await DemoHTTP.post(origin + "/api/signup", json: body)
        }.value?.totpSecret
    }

    /// Whether `password` (and `code`) signs in to `user` through `POST /api/signin` — a real
    /// sign-in: it opens a session and uses the code up.
    func signsIn(user: String, password: String, code: String? = nil) async throws -> Bool {
        struct Body: Encodable {
            var user: String
            var password: String
            var code: String?
        }
        struct Session: Decodable { var token: String }
        let body = Body(user: user, password: password, code: code)
        // 401: the password (or the code) does not sign in.
        let (status, _) = try await call("sign \(user) in", accepting: [401], as: Session.self) {
            try await DemoHTTP.post(origin + "/api/signin", json: body)
        }
        return status == 200
    }

    /// An account as shiny's `GET /api/demo/accounts/{user}` shows it.
    struct Account: Decodable {
        var hasPassword: Bool
        var signInSubject: String?
    }

    func account(_ user: String) async throws -> Account {
        let url = origin + "/api/demo/accounts/" + FormURLEncoding.escape(user)
        guard
            let account = try await call("show \(user)'s account", as: Account.self, { try await DemoHTTP.get(url) })
                .value
        else { throw Output.failure("shiny showed no account \(user)") }
        return account
    }

    /// A notification shiny accepted from the provider (`GET /api/demo/notifications`).
    struct Notification: Decodable {
        var type: String
        var sub: String
    }

    func notifications() async throws -> [Notification] {
        let url = origin + "/api/demo/notifications"
        return try await call("list its notifications", as: [Notification].self) { try await DemoHTTP.get(url) }.value
            ?? []
    }
}

/// Everything shiny printed, read on threads of their own so that shiny never blocks on a full pipe.
private final class OutputLog: Sendable {
    private struct Bytes {
        var stdout = Data()
        var stderr = Data()
        var stdoutClosed = false
    }

    private let bytes = Mutex(Bytes())
    private let waiter = Mutex<CheckedContinuation<String?, Never>?>(nil)

    var standardError: String { bytes.withLock { String(decoding: $0.stderr, as: UTF8.self) } }

    func drain(_ handle: FileHandle, standardOutput: Bool) {
        Thread {
            while true {
                let data = handle.availableData
                self.bytes.withLock {
                    if standardOutput {
                        $0.stdout += data
                        $0.stdoutClosed = data.isEmpty
                    } else {
                        $0.stderr += data
                    }
                }
                self.wake()
                if data.isEmpty { break }
            }
        }.start()
    }

    /// The first line on standard output: nil when it closes first or `timeout` passes.
    func firstLine(timeout: Duration) async -> String? {
        let timer = Task {
            try? await Task.sleep(for: timeout)
            self.resume(nil)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            waiter.withLock { $0 = continuation }
            wake()
        }
    }

    private func wake() {
        let (line, closed) = bytes.withLock { bytes -> (String?, Bool) in
            guard let end = bytes.stdout.firstIndex(of: UInt8(ascii: "\n")) else { return (nil, bytes.stdoutClosed) }
            return (String(decoding: bytes.stdout[..<end], as: UTF8.self), false)
        }
        if let line { resume(line) } else if closed { resume(nil) }
    }

    private func resume(_ line: String?) {
        waiter.withLock { waiting in
            waiting?.resume(returning: line)
            waiting = nil
        }
    }
}
