import Passkeys
import _KeyhavenSupport

/// One fuzz input: arbitrary bytes as a passkey registration would bring them — as authenticator
/// data, and as the attestation object of a registration whose client data is right, verified by
/// `PasskeyRelyingParty` (the path a service's registration endpoint takes).
///
/// Beyond "no crash": authenticator data that parses writes back to bytes that parse and write back
/// the same (maps in the extensions may come back in canonical order).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let data = try? AuthenticatorData(bytes) {
        let written = data.encoded()
        guard let again = try? AuthenticatorData(written), again.encoded() == written,
            again.attestedCredential == data.attestedCredential, again.signCount == data.signCount
        else {
            fatalError("authenticator data does not survive being written back")
        }
    }
    let response: JSONValue = [
        "type": "public-key",
        "response": [
            "clientDataJSON": .string(Base64URL.encode(clientData)),
            "attestationObject": .string(Base64URL.encode(bytes)),
        ],
    ]
    _ = try? relyingParty.verifyRegistration(response, challenge: [1, 2, 3])
    return 0
}

let relyingParty = PasskeyRelyingParty(rpID: "shiny.example", origins: ["https://shiny.example"])
let clientData = Authenticator.clientDataJSON(
    type: "webauthn.create",
    challenge: [1, 2, 3],
    origin: "https://shiny.example"
)

/// No generated seeds: scripts/fuzz.sh writes attestation objects.
func seeds() -> [[UInt8]] { [] }
