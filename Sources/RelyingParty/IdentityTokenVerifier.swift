import Crypto
public import Foundation
public import KeyhavenJOSE
import _KeyhavenSupport

/// The provider's public keys, fetched from its JWKS URL and cached. A token whose `kid` is not in
/// the cache makes one refetch (at most one per `refetchInterval`, so forged kids cannot make the
/// service hammer the provider); keys are picked by `kid` only, never "the first key".
public actor JWKSCache {
    let url: String
    let transport: any RelyingPartyTransport
    let refetchInterval: Duration
    let clock = ContinuousClock()
    var keys: [String: RSAPublicKey] = [:]
    /// When an unknown kid last made a refetch.
    var missRefetch: ContinuousClock.Instant?
    /// How many times the key set was downloaded (tests and metrics).
    public private(set) var fetchCount = 0

    public init(url: String, transport: any RelyingPartyTransport, refetchInterval: Duration = .seconds(10)) {
        self.url = url
        self.transport = transport
        self.refetchInterval = refetchInterval
    }

    /// The key for `kid`, fetching the set when it is unknown.
    public func key(for kid: String) async throws(JOSEError) -> RSAPublicKey {
        if let key = keys[kid] { return key }
        if fetchCount > 0 {
            if let missRefetch, clock.now - missRefetch < refetchInterval {
                throw JOSEError(.unknownKey, "no key \(kid) in the provider's key set")
            }
            missRefetch = clock.now
        }
        try await refresh()
        guard let key = keys[kid] else { throw JOSEError(.unknownKey, "no key \(kid) in the provider's key set") }
        return key
    }

    func refresh() async throws(JOSEError) {
        fetchCount += 1
        guard let (status, body) = try? await transport.get(url), status == 200,
            let set = try? JSONDecoder().decode(JWKSet.self, from: Data(body))
        else { throw JOSEError(.unknownKey, "the provider's key set could not be fetched") }
        var result: [String: RSAPublicKey] = [:]
        for jwk in set.keys where jwk.kty == "RSA" {
            guard let kid = jwk.kid, let key = try? RSAPublicKey(jwk: jwk) else { continue }
            result[kid] = key
        }
        keys = result
    }
}

/// Verifies identity tokens and notifications as a careful relying party should: RS256 only, the
/// key chosen by `kid`, `iss` exactly the provider's, `aud` one of the service's client ids, `exp`
/// and `iat` with a small leeway, and the nonce — raw or as its SHA-256 hex (native apps hash it).
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

    func verified<Claims: Decodable>(_ token: String, as type: Claims.Type) async throws(JOSEError) -> Claims {
        let jws = try CompactJWS(token)
        guard jws.header.alg == "RS256" else {
            throw JOSEError(.unsupportedAlgorithm, "alg \(jws.header.alg.debugDescription) is not RS256")
        }
        guard let kid = jws.header.kid else { throw JOSEError(.unknownKey, "the token has no kid") }
        try jws.verify(with: try await keys.key(for: kid))
        return try jws.claims(as: Claims.self)
    }

    func checkTimes(iat: Int64, exp: Int64) throws(JOSEError) {
        let now = Int64(self.now().timeIntervalSince1970)
        guard exp + leeway > now else { throw JOSEError(.expired, "the token expired") }
        guard iat <= now + leeway else { throw JOSEError(.notYetValid, "the token is issued in the future") }
    }
}
