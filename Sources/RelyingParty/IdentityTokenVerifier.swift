import Crypto
public import Foundation
import JWTKit
public import KeyhavenJOSE
import _KeyhavenSupport

/// The provider's public keys, fetched from its JWKS URL and cached as a jwt-kit key collection. A
/// token whose `kid` is not in the cache makes one refetch (at most one per `refetchInterval`, so
/// forged kids cannot make the service hammer the provider); keys are picked by `kid` only, never
/// "the first key" (the collection has no default key).
public actor JWKSCache {
    let url: String
    let transport: any RelyingPartyTransport
    let refetchInterval: Duration
    let clock = ContinuousClock()
    /// The keys of the last download: RSA keys of at least 2048 bits for RS256, EC P-256 keys for
    /// ES256, each added as a public key of its type (so HS256 with a public key cannot be a secret).
    var keys = JWTKeyCollection()
    var kids: Set<String> = []
    /// When an unknown kid last made a refetch.
    var missRefetch: ContinuousClock.Instant?
    /// How many times the key set was downloaded (tests and metrics).
    public private(set) var fetchCount = 0

    public init(url: String, transport: any RelyingPartyTransport, refetchInterval: Duration = .seconds(10)) {
        self.url = url
        self.transport = transport
        self.refetchInterval = refetchInterval
    }

    /// The key set holding `kid`, fetching the set when the kid is unknown.
    func keys(for kid: String) async throws(JOSEError) -> JWTKeyCollection {
        if kids.contains(kid) { return keys }
        if fetchCount > 0 {
            if let missRefetch, clock.now - missRefetch < refetchInterval {
                throw JOSEError(.unknownKey, "no key \(kid) in the provider's key set")
            }
            missRefetch = clock.now
        }
        try await refresh()
        guard kids.contains(kid) else { throw JOSEError(.unknownKey, "no key \(kid) in the provider's key set") }
        return keys
    }

    func refresh() async throws(JOSEError) {
        fetchCount += 1
        guard let (status, body) = try? await transport.get(url), status == 200,
            let set = try? JSONDecoder().decode(JWKSet.self, from: Data(body))
        else { throw JOSEError(.unknownKey, "the provider's key set could not be fetched") }
        let collection = JWTKeyCollection()
        var kids: Set<String> = []
        for jwk in set.keys {
            guard let kid = jwk.kid else { continue }
            switch (jwk.kty, jwk.alg) {
            case ("RSA", nil), ("RSA", "RS256"?):
                // jwt-kit refuses RSA keys under 2048 bits.
                guard let n = jwk.n, let e = jwk.e, let key = try? Insecure.RSA.PublicKey(modulus: n, exponent: e)
                else { continue }
                await collection.add(rsa: key, digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
            case ("EC", nil), ("EC", "ES256"?):
                guard jwk.crv == "P-256", let x = jwk.x, let y = jwk.y,
                    let key = try? ES256PublicKey(parameters: (x: x, y: y))
                else { continue }
                await collection.add(ecdsa: key, kid: JWKIdentifier(string: kid))
            default:
                continue
            }
            kids.insert(kid)
        }
        // Without a default key, a kid the collection does not hold finds no key at all.
        await collection.clearDefault()
        keys = collection
        self.kids = kids
    }
}

/// Verifies identity tokens and notifications as a careful relying party should, with vapor/jwt-kit
/// checking the signature: RS256 (or ES256) only, the algorithm the key's and never the header's
/// choice, the key chosen by `kid`, `iss` exactly the provider's, `aud` one of the service's client
/// ids, `exp` and `iat` with a small leeway, and the nonce — raw or as its SHA-256 hex (native apps
/// hash it). Every refusal is a ``JOSEError`` whose code names the rule that failed.
public struct IdentityTokenVerifier: Sendable {
    public let issuer: String
    public let audiences: Set<String>
    public let keys: JWKSCache
    /// Clock skew tolerated on `exp` and `iat`, in seconds.
    public var leeway: Int64 = 60
    public var now: @Sendable () -> Date = { Date() }

    public init(issuer: String, audiences: Set<String>, keys: JWKSCache) {
        self.issuer = issuer
        self.audiences = audiences
        self.keys = keys
    }

    /// The verified claims. With `nonce`, the token must carry it.
    public func verify(_ token: String, nonce: String? = nil) async throws(JOSEError) -> IdentityTokenClaims {
        let claims = try await verified(token, as: IdentityTokenClaims.self)
        guard claims.iss == issuer else { throw JOSEError(.wrongIssuer, "iss is not \(issuer)") }
        guard audiences.contains(claims.aud) else { throw JOSEError(.wrongAudience, "aud is not this service") }
        try checkTimes(iat: claims.iat, exp: claims.exp)
        if let nonce {
            let hashed = Hex.encode(SHA256.hash(data: Array(nonce.utf8)))
            guard let given = claims.nonce, given == nonce || given == hashed else {
                throw JOSEError(.badNonce, "the nonce is not the one this service sent")
            }
        }
        return claims
    }

    /// A server-to-server notification body `{"payload": "<JWS>"}`: the JWS is verified like an
    /// identity token (`aud` must be one of the service's ids), then its `events` string is parsed.
    public func verifyNotification(
        _ body: [UInt8]
    ) async throws(JOSEError) -> (
        claims: NotificationClaims, event: NotificationEvent
    ) {
        struct Envelope: Decodable { var payload: String }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: Data(body)) else {
            throw JOSEError(.malformed, "the body is not {\"payload\": \"<JWS>\"}")
        }
        let claims = try await verified(envelope.payload, as: NotificationClaims.self)
        guard claims.iss == issuer else { throw JOSEError(.wrongIssuer, "iss is not \(issuer)") }
        guard audiences.contains(claims.aud) else { throw JOSEError(.wrongAudience, "aud is not this service") }
        try checkTimes(iat: claims.iat, exp: claims.exp)
        guard let event = try? JSONDecoder().decode(NotificationEvent.self, from: Data(claims.events.utf8)),
            event.kind != nil
        else { throw JOSEError(.invalidClaim, "events is not one known event") }
        return (claims, event)
    }

    /// The signature checked by jwt-kit with the key named by the token's `kid`, then the claims.
    func verified<Claims: Codable & Sendable>(_ token: String, as type: Claims.Type) async throws(JOSEError) -> Claims {
        let header = try Self.header(of: token)
        guard let alg = header.alg else { throw JOSEError(.malformed, "the header has no alg") }
        guard alg == "RS256" || alg == "ES256" else {
            throw JOSEError(.unsupportedAlgorithm, "alg \(alg.debugDescription) is not RS256 or ES256")
        }
        guard let kid = header.kid else { throw JOSEError(.unknownKey, "the token has no kid") }
        let keySet = try await keys.keys(for: kid)
        // The algorithm is the key's: an RSA key checks RS256 tokens only, a P-256 key ES256 only.
        guard let key = try? await keySet.getKey(for: JWKIdentifier(string: kid)), key.name == alg else {
            throw JOSEError(.unsupportedAlgorithm, "alg \(alg) is not the algorithm of key \(kid)")
        }
        let payload: Verified<Claims>
        do {
            payload = try await keySet.verify(token, as: Verified<Claims>.self)
        } catch let error as JWTError {
            throw Self.refusal(error)
        } catch {
            throw JOSEError(.badSignature, "the signature could not be checked")
        }
        return try payload.claims.get()
    }

    /// The protected header, read before any key is chosen (its `alg` and `kid`).
    static func header(of token: String) throws(JOSEError) -> JWTHeader {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw JOSEError(.malformed, "a JWS has three dot-separated parts") }
        guard let bytes = Base64URL.decode(parts[0]),
            let header = try? JSONDecoder().decode(JWTHeader.self, from: Data(bytes))
        else { throw JOSEError(.malformed, "the header is not a base64url JSON object") }
        return header
    }

    /// jwt-kit's errors as the codes callers have always seen.
    static func refusal(_ error: JWTError) -> JOSEError {
        switch error.errorType {
        case .signatureVerificationFailed: JOSEError(.badSignature, "the signature does not verify")
        case .malformedToken: JOSEError(.malformed, "the token is not a JWS with a JSON object payload")
        case .noKeyProvided, .unknownKID, .missingKIDHeader: JOSEError(.unknownKey, "no key for the token's kid")
        case .unsupportedAlgorithm: JOSEError(.unsupportedAlgorithm, "the token's algorithm is refused")
        default: JOSEError(.badSignature, "the signature could not be checked (\(error.errorType))")
        }
    }

    func checkTimes(iat: Int64, exp: Int64) throws(JOSEError) {
        let now = Int64(self.now().timeIntervalSince1970)
        guard exp + leeway > now else { throw JOSEError(.expired, "the token expired") }
        guard iat <= now + leeway else { throw JOSEError(.notYetValid, "the token is issued in the future") }
    }
}

/// The claims as jwt-kit hands them over once the signature verifies. Their rules (issuer,
/// audience, times with the verifier's clock and leeway, nonce) are checked by
/// ``IdentityTokenVerifier`` so that each refusal keeps its own ``JOSEError`` code; a payload that
/// is a JSON object without the expected claims is `missingClaim`, not a malformed token.
struct Verified<Claims: Codable & Sendable>: JWTPayload {
    let claims: Result<Claims, JOSEError>

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        _ = try decoder.container(keyedBy: AnyKey.self)  // not an object: jwt-kit's malformedToken
        do {
            claims = .success(try Claims(from: decoder))
        } catch {
            claims = .failure(
                JOSEError(.missingClaim, "the claims do not have the expected shape (\(Self.describe(error)))")
            )
        }
    }

    func encode(to encoder: any Encoder) throws { try claims.get().encode(to: encoder) }

    func verify(using algorithm: some JWTAlgorithm) async throws {}

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "no \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "wrong type for \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.dataCorrupted(let context):
            "bad \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        default: "undecodable"
        }
    }
}
