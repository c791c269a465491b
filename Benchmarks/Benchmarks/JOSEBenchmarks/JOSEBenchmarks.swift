import Benchmark
import Foundation
import JWTKit
import KeyhavenJOSE
import RelyingParty

/// The identity provider's id_token signing (its hot path: one RS256 signature per token response)
/// with KeyhavenJOSE's signer against vapor/jwt-kit's, the same claims and key, in the same run; and
/// verifying that token with KeyhavenJOSE's verifier, with jwt-kit, and with the relying-party kit
/// (jwt-kit behind the JWKS cache and the claim checks).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        timeUnits: .microseconds,
        warmupIterations: 50,
        maxDuration: .seconds(5),
        maxIterations: 20_000
    )

    // What TokenEndpoint signs for a code exchange with the email scope.
    let issuer = "https://idp.bench.test"
    let now = Int64(Date().timeIntervalSince1970)
    let claims = IdentityTokenClaims(
        iss: issuer,
        sub: "000123.0123456789abcdef0123456789abcdef.0123",
        aud: "com.example.bench",
        iat: now,
        exp: now + 600,
        nonce: "2b4a8e4f1f0d4c3a9a1b7c6d5e4f3a2b",
        nonce_supported: true,
        c_hash: IdentityTokenClaims.halfHash("c.0123456789abcdef0123456789abcdef"),
        at_hash: IdentityTokenClaims.halfHash("a.grant.1700000000.0123456789abcdef"),
        email: "person@example.com",
        email_verified: BoolClaim(true),
        auth_time: now - 5,
        real_user_status: 2
    )
    let ours = try! RSASigningKey.generate(kid: "BENCHKEY01")
    // jwt-kit's JSON encoder set as ours is (sorted keys, `/` unescaped), for header and payload.
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let theirs = JWTKeyCollection(defaultJWTSerializer: DefaultJWTSerializer(jsonEncoder: encoder))
    let kid = JWKIdentifier(string: ours.kid)
    let bareKey = try! Insecure.RSA.PrivateKey(pem: ours.pemRepresentation)

    Benchmark("Sign.id_token KeyhavenJOSE (RS256)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try JWS.sign(claims, with: ours))
        }
    }

    Benchmark("Sign.id_token jwt-kit (RS256)") { benchmark in
        await theirs.add(rsa: bareKey, digestAlgorithm: .sha256, kid: kid)
        let payload = KitClaims(claims)
        for _ in benchmark.scaledIterations {
            blackHole(try await theirs.sign(payload, kid: kid))
        }
    }

    let token = try! JWS.sign(claims, with: ours)
    let publicKey = ours.publicKey

    Benchmark("Verify.id_token KeyhavenJOSE (RS256)") { benchmark in
        for _ in benchmark.scaledIterations {
            let jws = try CompactJWS(token)
            try jws.verify(with: publicKey)
            blackHole(try jws.claims(as: IdentityTokenClaims.self))
        }
    }

    Benchmark("Verify.id_token jwt-kit (RS256)") { benchmark in
        let keys = JWTKeyCollection()
        await keys.add(rsa: bareKey.publicKey, digestAlgorithm: .sha256, kid: kid)
        for _ in benchmark.scaledIterations {
            blackHole(try await keys.verify(token, as: KitClaims.self).claims)
        }
    }

    Benchmark("Verify.id_token RelyingParty kit (jwt-kit, claims checked)") { benchmark in
        let jwks = try JSONEncoder().encode(JWKSet(keys: [ours.publicJWK]))
        let verifier = IdentityTokenVerifier(
            issuer: issuer,
            audiences: ["com.example.bench"],
            keys: JWKSCache(url: "https://idp.bench.test/auth/keys", transport: StaticJWKS(body: Array(jwks)))
        )
        _ = try await verifier.verify(token)  // the key set fetched once, outside the measurement
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try await verifier.verify(token, nonce: "2b4a8e4f1f0d4c3a9a1b7c6d5e4f3a2b"))
        }
    }
}

/// The same claims as a jwt-kit payload, encoded by jwt-kit's default JSON encoder.
struct KitClaims: JWTPayload {
    var claims: IdentityTokenClaims
    init(_ claims: IdentityTokenClaims) { self.claims = claims }
    init(from decoder: any Decoder) throws { claims = try IdentityTokenClaims(from: decoder) }
    func encode(to encoder: any Encoder) throws { try claims.encode(to: encoder) }
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// A provider whose `/auth/keys` is always the same set, in memory.
struct StaticJWKS: RelyingPartyTransport {
    let body: [UInt8]
    func get(_ url: String) async throws -> (status: Int, body: [UInt8]) { (200, body) }
    func postForm(
        _ url: String,
        fields: [(String, String)],
        bearer: String?
    ) async throws -> (status: Int, body: [UInt8]) {
        (404, [])
    }
}
