import AutoFill
import Benchmark
import Crypto
import Foundation
import Passkeys
import Vault

/// Signatures per second in the agent (issue 16): a paired session's `passkey.assert` — the request
/// a browser sends once the person chose — including the passkey's counter and last use saved to
/// the vault (one SQLite commit each), next to the bare ES256 and Ed25519 assertions of Keyhaven's
/// authenticator (no vault). Peers: Benchmarks/scripts/passkey_benchmark.py measures OpenSSL's
/// ECDSA P-256 signing (PyPI `cryptography`) and the page → agent → page round trip in Chromium.
func passkeyBenchmarks() {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("keyhaven-passkeys-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let vaultURL = folder.appendingPathComponent("passkeys.sqlite")
    try! Vault.create(
        at: vaultURL,
        masterPassword: "benchmark master password",
        kdf: .random(logN: 10),
        allowInsecureKDF: true
    ).close()
    // The agent is an actor on its session's thread: set up from here by waiting for it.
    let agent = AutoFillAgent(vaultURL: vaultURL, allowInsecureKDF: true)
    let pairing = waitFor {
        try! await agent.unlock(masterPassword: "benchmark master password")
        // Pair as the extension does (CPace with the code the agent shows).
        let clientNonce = Data((0..<16).map { _ in UInt8.random(in: .min ... .max) })
        let offer = try! await agent.beginPairing(clientNonce: clientNonce, caller: "benchmark", browser: "chromium")
        let code = await agent.waitForPairingCode(timeout: 5)!.code
        let client = try! PairingExchange(
            role: .extensionSide,
            context: PairingContext(
                code: code,
                request: offer.request,
                browser: "chromium",
                caller: "benchmark",
                clientNonce: clientNonce,
                agentNonce: offer.agentNonce
            ),
            scalar: Data((0..<32).map { _ in UInt8.random(in: .min ... .max) })
        )
        return try! await agent.finishPairing(
            request: offer.request,
            clientShare: client.share,
            clientConfirm: client.keys(otherShare: offer.agentShare).clientConfirm
        ).pairingId
    }

    // Requests as the extension sends them (the protocol's JSON, written as literals).
    let registered = waitFor {
        await agent.handle(
            [
                "id": 1, "type": "passkey.register", "origin": "https://shop.example.com", "confirmed": true,
                "options": [
                    "rp": ["id": "example.com", "name": "Example"],
                    "user": ["id": "dXNlcg", "name": "ada", "displayName": "Ada"],
                    "challenge": "AAECAwQFBgcICQoLDA0ODw", "pubKeyCredParams": [["type": "public-key", "alg": -7]],
                ],
            ],
            pairingId: pairing
        )
    }
    let credentialID = registered["ok"]?["responseJson"]?["id"]?.string ?? ""
    @Sendable func assert() async -> Bool {
        await agent.handle(
            [
                "id": 2, "type": "passkey.assert", "origin": "https://shop.example.com",
                "credentialId": .string(credentialID), "userPresent": true,
                "options": [
                    "rpId": "example.com", "challenge": "AAECAwQFBgcICQoLDA0ODw", "userVerification": "preferred",
                ],
            ],
            pairingId: pairing
        )["ok"] != nil
    }
    precondition(waitFor { await assert() }, "the agent did not sign")

    Benchmark(
        "Passkey assertion by the agent (passkey.assert, counter saved to the vault)",
        configuration: .init(metrics: [.wallClock, .throughput], maxDuration: .seconds(10), maxIterations: 20_000)
    ) { benchmark async in
        for _ in benchmark.scaledIterations {
            blackHole(await assert())
        }
    }

    for algorithm in [-7, -8] {
        let (passkey, _) = try! Authenticator().register(
            CreationRequest(
                rpID: "example.com",
                rpName: "Example",
                userID: [1],
                userName: "ada",
                userDisplayName: "Ada",
                challenge: [1],
                algorithms: [algorithm]
            ),
            origin: "https://example.com",
            existing: [],
            userVerified: true
        )
        let request = AssertionRequest(rpID: "example.com", challenge: Array(repeating: 7, count: 32))
        let authenticator = Authenticator()
        Benchmark(
            "Passkey assertion, \(algorithm == -7 ? "ES256" : "Ed25519") (Authenticator, no vault)",
            configuration: .init(metrics: [.wallClock, .throughput], maxDuration: .seconds(5), maxIterations: 100_000)
        ) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(
                    try authenticator.authenticate(
                        request,
                        origin: "https://example.com",
                        credential: passkey,
                        userVerified: true
                    )
                )
            }
        }
    }
}

/// Waits for `body` from the benchmarks' synchronous registration (async set-up of an actor's
/// state; the work itself runs on the actor's own thread).
func waitFor<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = WaitBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        box.value = await body()
        done.signal()
    }
    done.wait()
    return box.value!
}

/// The value ``waitFor(_:)`` hands from its task to the waiting thread (the semaphore orders the
/// write before the read).
final class WaitBox<T>: @unchecked Sendable {
    var value: T?
}
