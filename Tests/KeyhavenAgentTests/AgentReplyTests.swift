import AutoFill
import Foundation
import KeyhavenSync
import Testing
import _KeyhavenSupport

@testable import KeyhavenAgent

/// The agent's answers to the CLI's `agent.*` commands: one type per command, written by the
/// agent and read by the CLI through the ``AgentCall`` that asked; what the CLI cannot read is a
/// typed error that says why, never a crash or a default.
@Suite struct AgentReplyTests {
    static let status: AgentReply.Status = {
        var session = AutoFillAgent.Status(
            state: .unlocked,
            vault: "/home/ada/.local/share/keyhaven/vault.db",
            revision: 12,
            idleLockSeconds: 900
        )
        (session.identities, session.pairings, session.lockInSeconds) = (2, 1, 899)
        return AgentReply.Status(
            session: session,
            agentVersion: "0.1.0",
            socket: "/run/user/1000/keyhaven/agent.sock",
            pid: 4242
        )
    }()

    /// Sends `reply` as the agent does and reads it as the CLI does; the kind of command it answers.
    func roundTrip<Reply: Codable & Sendable & Hashable>(
        _ call: AgentCall<Reply>,
        _ reply: Reply,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> AgentCommand.Kind {
        let kind = call.command.kind
        #expect(
            ObjectIdentifier(Reply.self) == ObjectIdentifier(kind.replyType),
            "the client reads \(kind.type) as the server answers it",
            sourceLocation: sourceLocation
        )
        let frame = AgentResponse.encode(id: 1, .success(reply))
        let read = AgentResponse.decode(frame, as: call)
        #expect((try? read.get()) == reply, "\(kind.type): \(read)", sourceLocation: sourceLocation)
        return kind
    }

    @Test func everyCommandsReplyRoundTripsThroughItsType() {
        var syncing = Self.status
        var background = BackgroundSync.State()
        (background.phase, background.lastError, background.lastErrorMessage) = ("backingOff", "unreachable", "gone")
        (background.failures, background.syncs) = (3, 7)
        (background.lastSync, background.nextAttempt) = (
            Date(timeIntervalSince1970: 1_800_000_000), Date(timeIntervalSince1970: 1_800_000_004)
        )
        syncing.sync = background
        let kinds = [
            roundTrip(.status, Self.status),
            roundTrip(.status, syncing),
            roundTrip(
                .status,
                AgentReply.Status(
                    session: AutoFillAgent.Status(state: .locked, vault: "/v", revision: 0, idleLockSeconds: 0),
                    agentVersion: "t",
                    socket: "/s",
                    pid: 1
                )
            ),
            roundTrip(.unlock(masterPassword: "pw"), AgentReply.State(.unlocked)),
            roundTrip(.lock, AgentReply.State(.locked)),
            roundTrip(.stop, AgentReply.State(.stopped)),
            roundTrip(.pairCode(timeoutSeconds: 5), AgentReply.PairingCode(code: "123456", clientName: "Chromium")),
            roundTrip(.pairings, []),
            roundTrip(
                .pairings,
                [
                    AgentReply.Pairing(
                        id: "p1",
                        name: "Chromium on ada's laptop",
                        caller: "chrome-extension://abc/",
                        browser: "chromium",
                        created: "2026-11-27T21:00:00Z"
                    )
                ]
            ),
            roundTrip(.revokePairing(pairingId: "p1"), AgentReply.Revoked(revoked: "p1")),
            roundTrip(.sites, ["example.com", "example.org"]),
            roundTrip(
                .ui(port: 0, launchFile: true),
                AgentReply.WebAppLaunch(
                    url: "http://127.0.0.1:8123/launch?secret=abc",
                    port: 8123,
                    launchFile: "/run/user/1000/keyhaven/launch-1.html"
                )
            ),
            roundTrip(
                .ui(port: nil, launchFile: nil),
                AgentReply.WebAppLaunch(url: "http://127.0.0.1:1/launch?secret=x", port: 1, launchFile: nil)
            ),
        ]
        #expect(Set(kinds) == Set(AgentCommand.Kind.allCases), "every command's reply is tried")
    }

    /// The wire is what it was before the replies were typed (the CLI's `--json` prints these
    /// members): one flat object per answer, keys sorted, slashes not escaped.
    @Test func theWireIsTheFlatJSONItWasBefore() throws {
        let status = String(decoding: AgentResponse.encode(id: 3, .success(Self.status)), as: UTF8.self)
        #expect(
            status == #"{"id":3,"ok":{"agentVersion":"0.1.0","identities":2,"idleLockSeconds":900,"#
                + #""lockInSeconds":899,"pairings":1,"pid":4242,"revision":12,"#
                + #""socket":"/run/user/1000/keyhaven/agent.sock","state":"unlocked","#
                + #""vault":"/home/ada/.local/share/keyhaven/vault.db"},"v":1}"#
        )
        let locked = AgentReply.Status(
            session: AutoFillAgent.Status(state: .locked, vault: "/v", revision: 0, idleLockSeconds: 0),
            agentVersion: "t",
            socket: "/s",
            pid: 1
        )
        let lockedObject = try JSONValue.parse(AgentResponse.encode(id: 1, .success(locked)))["ok"]?.object
        #expect(
            lockedObject.map { Set($0.keys) }
                == ["agentVersion", "idleLockSeconds", "pid", "revision", "socket", "state", "vault"],
            "a locked agent has no counts and no lock time"
        )
        #expect(
            String(decoding: AgentResponse.encode(id: 1, .success(AgentReply.State(.stopped))), as: UTF8.self)
                == #"{"id":1,"ok":{"state":"stopped"},"v":1}"#
        )
        #expect(
            String(decoding: AgentResponse.encode(id: .null, .success([String]())), as: UTF8.self)
                == #"{"id":null,"ok":[],"v":1}"#
        )
        let refusal = AgentResponse.encode(id: 2, .failure(AutoFillError(.locked, "Keyhaven is locked.")))
        #expect(
            String(decoding: refusal, as: UTF8.self)
                == #"{"error":{"code":"locked","localizedFailureReason":"Keyhaven is locked."},"id":2,"v":1}"#
        )
    }

    /// The agent's refusal reaches the CLI with its code and reason, as sent.
    @Test func aRefusalIsReadWithItsCodeAndReason() {
        let frame = AgentResponse.encode(
            id: 1,
            .failure(AutoFillError(.wrongPassword, "The master password is wrong."))
        )
        let read = AgentResponse.decode(frame, as: .unlock(masterPassword: "nope"))
        guard case .failure(let error) = read else {
            Issue.record("a refusal is an error, not \(read)")
            return
        }
        #expect(error.code == .wrongPassword && error.message == "The master password is wrong.")
    }

    /// What the CLI cannot read (a newer protocol, not JSON, another shape) is a typed error that
    /// says what to do and never repeats what the frame holds.
    @Test(arguments: [
        (#"{"v":2,"id":1,"ok":{"state":"locked"}}"#, "unsupportedVersion", "version 2"),
        (#"{"v":"1","id":1,"ok":{"state":"locked"}}"#, "badReply", "v that is not an integer"),
        (#"{"id":1,"ok":{"state":"locked"}}"#, "badReply", "no protocol version"),
        ("nope", "badReply", "not a JSON object"),
        ("[1,2]", "badReply", "not a JSON object"),
        (#"{"v":1,"id":1}"#, "badReply", "neither ok nor error"),
        (#"{"v":1,"id":1,"ok":null}"#, "badReply", "neither ok nor error"),
        (#"{"v":1,"id":1,"ok":{"state":"s3cret"}}"#, "badReply", "ok.state"),
        (#"{"v":1,"id":1,"ok":["s3cret"]}"#, "badReply", "could not be read"),
        (#"{"v":1,"id":1,"error":{"code":"s3cret"}}"#, "badReply", "error.localizedFailureReason is missing"),
    ])
    func anAnswerTheCLICannotReadIsATypedError(frame: String, code: String, says: String) {
        let read = AgentResponse.decode(Data(frame.utf8), as: .lock)
        guard case .failure(let error) = read else {
            Issue.record("\(frame) is not an answer to agent.lock, yet it was read: \(read)")
            return
        }
        #expect(error.code.name == code, "\(frame): \(error)")
        #expect(error.message.contains(says), "\(frame): \(error.message)")
        #expect(error.message.contains("keyhaven agent stop"), "says what to do: \(error.message)")
        #expect(!error.message.contains("s3cret"), "never repeats the frame: \(error.message)")
    }

    /// Each answer is read as the type of the command that asked: a status without its process
    /// members, or pairings where sites are expected, is refused rather than half read.
    @Test func anAnswerOfAnotherShapeIsRefused() {
        let withoutPID =
            #"{"v":1,"id":1,"ok":{"state":"locked","vault":"/v","revision":0,"idleLockSeconds":0,"#
            + #""agentVersion":"t","socket":"/s"}}"#
        guard case .failure(let missing) = AgentResponse.decode(Data(withoutPID.utf8), as: .status) else {
            Issue.record("a status without pid is refused")
            return
        }
        #expect(missing.code == .badReply && missing.message.contains("ok.pid is missing"), "\(missing.message)")
        let pairings = AgentResponse.encode(id: 1, .success([AgentReply.Revoked(revoked: "p1")]))
        guard case .failure(let other) = AgentResponse.decode(pairings, as: .sites) else {
            Issue.record("objects are not sites")
            return
        }
        #expect(other.code == .badReply && other.message.contains("agent.sites"), "\(other.message)")
    }
}
