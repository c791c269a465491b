import AccountModification
import Foundation
import Testing
import _KeyhavenSupport

/// convert-to-passkey in the flow (issue 16): the passkey is asked for, made, handed over, and only
/// then may the service complete; the protocol's other requests never carry one.
struct PasskeyConversionFlowTests {
    typealias Base = ModificationFlowTests
    static let options: JSONValue = [
        "rp": ["id": "shiny.example"], "challenge": "AAEC", "user": ["id": "dQ", "name": "alice"],
    ]

    static func conversion() -> ModificationFlow {
        ModificationFlow(
            kind: .convertToPasskey,
            requestId: "r1",
            serviceIdentifier: "shiny.example",
            existingCredential: Base.credential
        )
    }

    @Test func asksForAPasskeyHandsItOverAndCompletes() {
        var flow = Self.conversion()
        guard case .send(.convertToPasskey(let request)) = flow.start() else {
            Issue.record("expected a convert-to-passkey request")
            return
        }
        #expect(request.existingCredential == Base.credential && request.interaction == .none)
        let asked = flow.handle(Base.response(.needsPasskeyRegistration) { $0.passkeyCreationOptions = Self.options })
        #expect(asked == .createPasskey(Self.options))
        // A poll while the passkey is being made does not ask twice.
        #expect(
            flow.handle(Base.response(.needsPasskeyRegistration) { $0.passkeyCreationOptions = Self.options }) == .poll
        )
        let registration = PasskeyRegistration(credential: ["id": "AQ", "type": "public-key"])
        #expect(flow.passkeyCreated(registration) == .sendPasskeyRegistration(registration))
        #expect(flow.handle(Base.response(.pending)) == .poll)
        #expect(
            flow.handle(Base.response(.completed) { $0.passwordRetired = true })
                == .finish(.passkeyLinked(passwordRetired: true))
        )
    }

    @Test func completingWithoutAPasskeyIsAViolation() {
        var flow = Self.conversion()
        _ = flow.start()
        guard case .finish(.failed(let error)) = flow.handle(Base.response(.completed)) else {
            Issue.record("a conversion completed before any passkey was handed over")
            return
        }
        #expect(error.localizedFailureReason?.contains("without a passkey") == true)

        // Nor after Keyhaven said it made none.
        var declined = Self.conversion()
        _ = declined.start()
        _ = declined.handle(Base.response(.needsPasskeyRegistration) { $0.passkeyCreationOptions = Self.options })
        _ = declined.passkeyCreated(PasskeyRegistration(error: "excluded"))
        guard case .finish(.failed) = declined.handle(Base.response(.completed)) else {
            Issue.record("completed although no passkey was handed over")
            return
        }
    }

    @Test func otherRequestsNeverAskForAPasskeyAndOptionsAreRequired() {
        var change = Base.change()
        _ = change.start()
        guard
            case .finish(.failed) = change.handle(
                Base.response(.needsPasskeyRegistration) { $0.passkeyCreationOptions = Self.options }
            )
        else {
            Issue.record("a password change asked for a passkey")
            return
        }
        var conversion = Self.conversion()
        _ = conversion.start()
        guard case .finish(.failed) = conversion.handle(Base.response(.needsPasskeyRegistration)) else {
            Issue.record("needsPasskeyRegistration without options was accepted")
            return
        }
        // A passkey out of turn.
        var early = Self.conversion()
        _ = early.start()
        guard case .finish(.failed) = early.passkeyCreated(PasskeyRegistration(credential: [:])) else {
            Issue.record("a passkey before the service asked was accepted")
            return
        }
    }

    @Test func theWireNamesAreTheDocumentedOnes() throws {
        let response = ModificationResponse(
            requestId: "r1",
            status: .needsPasskeyRegistration,
            passkeyCreationOptions: Self.options,
            passwordRetired: false
        )
        let json = try JSONValue.parse(JSONEncoder().encode(response))
        #expect(json["status"]?.string == "needsPasskeyRegistration")
        #expect(json["passkeyCreationOptions"]?["rp"]?["id"]?.string == "shiny.example")
        #expect(json["passwordRetired"]?.bool == false)
        let manifest = try JSONDecoder().decode(
            AccountModificationManifest.self,
            from: Data(#"{"endpoint":"/x","supportsStrongPasswordChange":true,"supportsUpgradeToSignIn":false}"#.utf8)
        )
        #expect(manifest.supportsUpgradeToPasskey == nil)  // older manifests still read
    }
}
