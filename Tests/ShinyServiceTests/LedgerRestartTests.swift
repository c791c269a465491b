import AccountModification
import AsyncHTTPClient
import Foundation
import KeyhavenTesting
import NIOCore
import NIOHTTP1
import OneTimeCodes
import ShinyService
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Issue 13 #15: the kit's ledger keeps its word across a real restart of the `shiny` process. Found
/// by an independent protocol client: after a restart, an identical retry of a completed password
/// change ran again (and failed: the old password no longer worked), `GET requests/{id}` then
/// answered `failed` although shiny held the new password, and a cancel answered 404.
struct LedgerRestartTests {
    /// A `shiny` process on `database`, and the origin it printed.
    struct RunningShiny {
        var running: ShinyExecutableTests.Running
        var origin: String

        static func start(database: String) async throws -> RunningShiny {
            let running = try ShinyExecutableTests.start(["--port", "0", "--database", database])
            let line = try await running.firstLine()
            let prefix = "shiny listening on "
            guard line.hasPrefix(prefix) else {
                running.process.terminate()
                throw StartFailure(line: line)
            }
            return RunningShiny(running: running, origin: String(line.dropFirst(prefix.count)))
        }

        /// SIGTERM, as an operator (or systemd) restarts a service; waits for the process to end.
        func stop() async throws {
            running.process.terminate()
            #expect(try await running.exited(within: .seconds(20)))
        }
    }

    struct StartFailure: Error, CustomStringConvertible {
        var line: String
        var description: String { "shiny did not start: \(line)" }
    }

    static func call(
        _ url: String,
        method: HTTPMethod = .GET,
        json: (some Encodable)? = String?.none
    ) async throws -> (status: UInt, body: String) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(json)))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        return (response.status.code, String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    static func decode(_ text: String) throws -> ModificationResponse {
        try JSONDecoder().decode(ModificationResponse.self, from: Data(text.utf8))
    }

    static func change(
        _ id: String,
        user: String,
        password: String,
        interaction: Interaction = .none
    ) -> ChangePasswordRequest {
        ChangePasswordRequest(
            requestId: id,
            serviceIdentifier: "127.0.0.1",
            existingCredential: PasswordCredential(user: user, password: password),
            newPassword: "Strong-Password-42x",
            userInfo: nil,
            interaction: interaction
        )
    }

    @Test func answersAreDurableAndFinalAcrossARealRestart() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("shiny-restart-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let database = folder.appendingPathComponent("shiny.sqlite").path

        let first = try await RunningShiny.start(database: database)
        defer { if first.running.process.isRunning { kill(first.running.process.processIdentifier, SIGKILL) } }
        let api = first.origin + "/account-modification"
        for (user, totp) in [("alice", false), ("dora", false), ("bob", true)] {
            let signUp = try await Self.call(
                first.origin + "/api/signup",
                method: .POST,
                json: ShinySignUpRequest(user: user, password: "Welcome12345", totp: totp)
            )
            #expect(signUp.status == 201, "\(signUp.body)")
        }
        let completed = try await Self.call(
            api + "/change-password",
            method: .POST,
            json: Self.change("restart-1", user: "alice", password: "Welcome12345")
        )
        #expect(try Self.decode(completed.body).status == .completed)

        // interaction: allowed for an account with no second factor: done, with no page asking for
        // an authenticator code the person cannot have.
        let noSecondFactor = try await Self.call(
            api + "/change-password",
            method: .POST,
            json: Self.change("restart-2", user: "dora", password: "Welcome12345", interaction: .allowed)
        )
        let doraAnswer = try Self.decode(noSecondFactor.body)
        #expect(doraAnswer.status == .completed && doraAnswer.interfaceURL == nil, "\(noSecondFactor.body)")

        // A request still open when shiny stops (bob's step-up page, never confirmed).
        _ = try await Self.call(
            api + "/change-password",
            method: .POST,
            json: Self.change("restart-3", user: "bob", password: "Welcome12345")
        )
        let open = try await Self.call(
            api + "/change-password",
            method: .POST,
            json: Self.change("restart-3", user: "bob", password: "Welcome12345", interaction: .allowed)
        )
        #expect(try Self.decode(open.body).status == .presentInterface)

        try await first.stop()
        let second = try await RunningShiny.start(database: database)
        defer { if second.running.process.isRunning { kill(second.running.process.processIdentifier, SIGKILL) } }
        let again = second.origin + "/account-modification"

        // The identical retry: exactly the recorded answer, byte for byte; nothing runs again (it
        // would fail now: the old password no longer works).
        let retry = try await Self.call(
            again + "/change-password",
            method: .POST,
            json: Self.change("restart-1", user: "alice", password: "Welcome12345")
        )
        #expect(retry.status == 200)
        #expect(retry.body == completed.body)
        let polled = try await Self.call(again + "/requests/restart-1")
        #expect(polled.status == 200 && polled.body == completed.body)
        let cancelled = try await Self.call(
            again + "/requests/restart-1/cancel",
            method: .POST,
            json: [String: String]()
        )
        #expect(cancelled.status == 200 && cancelled.body == completed.body, "\(cancelled.body)")
        #expect(try await Self.call(again + "/requests/restart-2").body == noSecondFactor.body)

        // Another request under a used id is still a conflict after the restart.
        let other = try await Self.call(
            again + "/change-password",
            method: .POST,
            json: Self.change("restart-1", user: "dora", password: "Strong-Password-42x")
        )
        #expect(other.status == 409)

        // The request open at the restart can no longer finish: it answers `failed`, and keeps
        // answering exactly that to a poll, a retry and a cancel.
        let stranded = try await Self.call(again + "/requests/restart-3")
        let strandedAnswer = try Self.decode(stranded.body)
        #expect(strandedAnswer.status == .failed)
        #expect(
            try await Self.call(again + "/requests/restart-3/cancel", method: .POST, json: [String: String]()).body
                == stranded.body
        )
        #expect(try await Self.call(again + "/requests/restart-3").body == stranded.body)

        // shiny holds the new password, as the recorded answer says.
        let signIn = try await Self.call(
            second.origin + "/api/signin",
            method: .POST,
            json: ShinySignInRequest(user: "alice", password: "Strong-Password-42x")
        )
        #expect(signIn.status == 200)
        try await second.stop()
    }
}
