import Crypto
import Foundation
public import _KeyhavenSupport

/// What a service mounts to accept passkeys (WebAuthn Level 3 §7): verifies registrations
/// (attestation `none`, and `packed` self attestation; other formats only when the service does not
/// care who made the authenticator) and assertions (client data, RP ID hash, flags, signature,
/// counter). No HTTP and no storage: the service keeps challenges and credentials, shiny shows how.
public struct PasskeyRelyingParty: Sendable {
    public var rpID: String
    /// Origins whose pages may use these passkeys (`https://shiny.example`).
    public var origins: Set<String>
    public var algorithms: Set<Int>
    /// Accept attestation formats this kit cannot verify (`fido-u2f`, `tpm`, …, or `packed` with a
    /// certificate), reporting them as unverified. Services that ask for attestation `none` (most)
    /// want this.
    public var acceptUnverifiedAttestation: Bool

    public init(
        rpID: String,
        origins: Set<String>,
        algorithms: Set<Int> = [-7, -8],
        acceptUnverifiedAttestation: Bool = true
    ) {
        self.rpID = rpID
        self.origins = origins
        self.algorithms = algorithms
        self.acceptUnverifiedAttestation = acceptUnverifiedAttestation
    }

    /// A registered passkey, to store with the account.
    public struct Registration: Sendable, Hashable {
        public var credentialID: [UInt8]
        public var publicKey: COSEKey
        public var signCount: UInt32
        public var userVerified: Bool
        public var backupEligible: Bool
        public var backedUp: Bool
        public var aaguid: [UInt8]
        /// `none`, `packed` (self attestation, verified), or `unverified:<fmt>`.
        public var attestation: String
    }

    /// A verified sign-in.
    public struct Authentication: Sendable, Hashable {
        public var credentialID: [UInt8]
        public var newSignCount: UInt32
        public var userVerified: Bool
        public var backedUp: Bool
        /// The user handle the authenticator returned (discoverable credentials).
        public var userHandle: [UInt8]?
    }

    // MARK: Registration

    public func verifyRegistration(
        _ response: JSONValue,
        challenge: [UInt8],
        requireUserVerification: Bool = false
    ) throws(PasskeyError) -> Registration {
        guard response["type"]?.string == "public-key",
            let body = response["response"],
            let clientDataJSON = body["clientDataJSON"]?.string.flatMap({ Base64URL.decode($0) }),
            let attestationBytes = body["attestationObject"]?.string.flatMap({ Base64URL.decode($0) })
        else { throw refused(.invalidResponse, "not a registration response") }
        try checkClientData(clientDataJSON, type: "webauthn.create", challenge: challenge)
        let attestation: CBOR
        do {
            attestation = try CBOR.decode(attestationBytes, maximumDepth: 8)
        } catch {
            throw refused(.invalidResponse, "the attestation object is not CBOR (\(error.code))")
        }
        guard let fmt = attestation["fmt"]?.string, let statement = attestation["attStmt"], statement.pairs != nil,
            let authDataBytes = attestation["authData"]?.byteString
        else { throw refused(.invalidResponse, "the attestation object lacks fmt, attStmt or authData") }
        let authData = try AuthenticatorData(authDataBytes)
        try checkAuthenticatorData(authData, requireUserVerification: requireUserVerification)
        guard let credential = authData.attestedCredential else {
            throw refused(.invalidResponse, "the authenticator data carries no credential")
        }
        guard algorithms.contains(credential.publicKey.algorithm.rawValue) else {
            throw refused(.unsupportedAlgorithm, "the credential's algorithm was not offered")
        }
        if let id = response["rawId"]?.string.flatMap({ Base64URL.decode($0) }), id != credential.credentialID {
            throw refused(.invalidResponse, "rawId is not the attested credential id")
        }
        let kind: String
        switch fmt {
        case "none":
            guard statement.pairs?.isEmpty == true else {
                throw refused(.invalidAttestation, "fmt none with a statement")
            }
            kind = "none"
        case "packed" where statement["x5c"] == nil:
            // Self attestation: signed by the credential's own key over authData || hash(clientData).
            guard statement["alg"]?.int == credential.publicKey.algorithm.rawValue,
                let signature = statement["sig"]?.byteString,
                credential.publicKey.isValidSignature(
                    signature,
                    for: authDataBytes + Array(SHA256.hash(data: clientDataJSON))
                )
            else { throw refused(.invalidAttestation, "the packed self attestation does not verify") }
            kind = "packed"
        default:
            guard acceptUnverifiedAttestation else {
                throw refused(.invalidAttestation, "attestation format \(fmt) cannot be verified here")
            }
            kind = "unverified:\(fmt)"
        }
        return Registration(
            credentialID: credential.credentialID,
            publicKey: credential.publicKey,
            signCount: authData.signCount,
            userVerified: authData.flags.contains(.userVerified),
            backupEligible: authData.flags.contains(.backupEligible),
            backedUp: authData.flags.contains(.backedUp),
            aaguid: credential.aaguid,
            attestation: kind
        )
    }

    // MARK: Authentication

    /// Verifies a sign-in with a stored passkey. `storedSignCount` is the counter kept with it: a
    /// counter that does not grow (when either is non-zero) suggests a cloned authenticator and is
    /// refused.
    public func verifyAuthentication(
        _ response: JSONValue,
        challenge: [UInt8],
        publicKey: COSEKey,
        storedSignCount: UInt32,
        requireUserVerification: Bool = false
    ) throws(PasskeyError) -> Authentication {
        guard response["type"]?.string == "public-key",
            let body = response["response"],
            let id = response["rawId"]?.string.flatMap({ Base64URL.decode($0) }),
            let clientDataJSON = body["clientDataJSON"]?.string.flatMap({ Base64URL.decode($0) }),
            let authDataBytes = body["authenticatorData"]?.string.flatMap({ Base64URL.decode($0) }),
            let signature = body["signature"]?.string.flatMap({ Base64URL.decode($0) })
        else { throw refused(.invalidResponse, "not an authentication response") }
        try checkClientData(clientDataJSON, type: "webauthn.get", challenge: challenge)
        let authData = try AuthenticatorData(authDataBytes)
        try checkAuthenticatorData(authData, requireUserVerification: requireUserVerification)
        guard publicKey.isValidSignature(signature, for: authDataBytes + Array(SHA256.hash(data: clientDataJSON)))
        else {
            throw refused(.invalidSignature, "the signature does not verify")
        }
        if (authData.signCount != 0 || storedSignCount != 0) && authData.signCount <= storedSignCount {
            throw refused(.counterRegressed, "the signature counter did not grow: the passkey may have been cloned")
        }
        let userHandle = body["userHandle"]?.string.flatMap { Base64URL.decode($0) }
        return Authentication(
            credentialID: id,
            newSignCount: authData.signCount,
            userVerified: authData.flags.contains(.userVerified),
            backedUp: authData.flags.contains(.backedUp),
            userHandle: userHandle.flatMap { $0.isEmpty ? nil : $0 }
        )
    }

    // MARK: Checks shared by both

    func checkClientData(_ bytes: [UInt8], type: String, challenge: [UInt8]) throws(PasskeyError) {
        guard let clientData = try? JSONValue.parse(Data(bytes)) else {
            throw refused(.invalidClientData, "clientDataJSON is not JSON")
        }
        guard clientData["type"]?.string == type else { throw refused(.invalidClientData, "the type is not \(type)") }
        guard let given = clientData["challenge"]?.string.flatMap({ Base64URL.decode($0) }),
            constantTimeEqual(given, challenge)
        else { throw refused(.invalidClientData, "the challenge is not the one issued") }
        guard let origin = clientData["origin"]?.string, origins.contains(origin) else {
            throw refused(.invalidClientData, "the page's origin is not one of this service's")
        }
        if clientData["crossOrigin"]?.bool == true {
            throw refused(.invalidClientData, "the request came from a cross-origin frame")
        }
    }

    func checkAuthenticatorData(_ data: AuthenticatorData, requireUserVerification: Bool) throws(PasskeyError) {
        guard constantTimeEqual(data.rpIDHash, Array(SHA256.hash(data: Data(rpID.utf8)))) else {
            throw refused(.invalidAuthenticatorData, "the credential is for another RP ID")
        }
        guard data.flags.contains(.userPresent) else {
            throw refused(.invalidAuthenticatorData, "the user was not present")
        }
        if requireUserVerification && !data.flags.contains(.userVerified) {
            throw refused(.invalidAuthenticatorData, "the user was not verified")
        }
        if data.flags.contains(.backedUp) && !data.flags.contains(.backupEligible) {
            throw refused(.invalidAuthenticatorData, "backed up but not backup eligible")
        }
    }

    func refused(_ code: PasskeyError.Code, _ message: String, line: UInt = #line) -> PasskeyError {
        PasskeyError(code, message, line: line)
    }
}
