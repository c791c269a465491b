import Foundation
import KeyhavenTesting
import Testing
import Vault

/// scrypt never goes below Keyhaven's floor (N=2^17, r=8, p=1; security review L15) unless weak
/// parameters are explicitly allowed — creating, re-keying and opening.
@Suite(.offCooperativePool)
struct KDFFloorTests {
    static let weak: [KDFParameters] = [
        .random(logN: 10), .random(logN: 16), .random(logN: 17, r: 1), .random(logN: 17, r: 4),
        KDFParameters(logN: 17, salt: Data(repeating: 7, count: 8)),
    ]

    @Test func parametersBelowTheFloorAreRecognised() {
        for kdf in Self.weak {
            #expect(!kdf.meetsFloor, "\(kdf.logN) \(kdf.r) \(kdf.p)")
        }
        #expect(KDFParameters.random(logN: 17).meetsFloor)
        #expect(KDFParameters.random(logN: 18, r: 8, p: 2).meetsFloor)
    }

    @Test func creatingBelowTheFloorIsRefusedUnlessAllowed() throws {
        let directory = try TemporaryDirectory.make()
        for (index, kdf) in Self.weak.enumerated() {
            let url = directory.appendingPathComponent("weak-\(index).sqlite")
            #expect(throws: VaultError(.insecureKDF, "")) {
                try Vault.create(at: url, masterPassword: "a perfectly fine master password", kdf: kdf)
            }
            #expect(!FileManager.default.fileExists(atPath: url.path))
        }
        let url = directory.appendingPathComponent("allowed.sqlite")
        try Vault.create(at: url, masterPassword: "pw", kdf: .random(logN: 10), allowInsecureKDF: true).close()
        #expect(try Vault.open(at: url, masterPassword: "pw", allowInsecureKDF: true).count() == 0)
    }

    /// The review's experiment: `passwd --scrypt-log-n 10` succeeded silently.
    @Test func reKeyingBelowTheFloorIsRefusedUnlessAllowed() throws {
        let test = try TestVault()
        let id = try test.vault.add(CredentialContent(services: [.init("a.example")], user: "a", password: "pa"))
        #expect(throws: VaultError(.insecureKDF, "")) {
            try test.vault.changeMasterPassword(to: "another fine master password", kdf: .random(logN: 10))
        }
        // Nothing changed: the old password still opens it.
        #expect(try test.reopen().credential(id).password == "pa")
    }

    @Test func openingAVaultBelowTheFloorIsRefusedUnlessAllowed() throws {
        let test = try TestVault()
        try test.vault.add(CredentialContent(services: [.init("a.example")], user: "a", password: "pa"))
        try test.vault.close()
        let before = VaultFileEdits.contents(test.url)
        #expect {
            try Vault.open(at: test.url, masterPassword: test.masterPassword)
        } throws: { error in
            guard let error = error as? VaultError else { return false }
            return error.code == .insecureKDF && error.message.contains("N=2^10")
                && error.message.contains("--insecure-kdf")
        }
        #expect(VaultFileEdits.contents(test.url) == before)
        // Allowed, it opens, and re-keying with calibrated parameters lifts it above the floor.
        let vault = try Vault.open(at: test.url, masterPassword: test.masterPassword, allowInsecureKDF: true)
        try vault.changeMasterPassword(to: test.masterPassword, kdf: .random(logN: KDFParameters.minimumLogN))
        #expect(try vault.kdfParameters().meetsFloor)
        try vault.close()
        #expect(try Vault.open(at: test.url, masterPassword: test.masterPassword).count() == 1)
    }
}
