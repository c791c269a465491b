import AccountModification
import ArgumentParser
import Foundation
import KeyhavenApp
import UpgradeHTTP
import Vault
import _KeyhavenSupport

extension Keyhaven {
    struct Serve: VaultCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run Keyhaven's loopback API for apps (in-app account upgrades).",
            discussion: """
                Apps POST {"type":"change-password","user":…,"serviceIdentifier":…,"userInfo":{…}} to \
                http://127.0.0.1:PORT/v1/requests with "Authorization: Bearer TOKEN"; Keyhaven runs the \
                upgrade with the service (no password crosses the app), updates the vault, and answers \
                {"status":"completed"|"failed",…}. The token is written to --token-file (mode 0600). \
                Listens on 127.0.0.1 only. Contract: docs/openapi/account-modification.yaml (local-api).
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @Option(name: .long, help: "Port on 127.0.0.1 (0 picks a free one).") var port = 7878
        @Option(name: .customLong("token-file"), help: "Where to write the API token (default: beside the vault).")
        var tokenFile: String?

        func run() async throws {
            let unlocked = try await openSession()
            try await withUnlockedVault(unlocked) { vault in
                try await Reconciler.run(vault)
                let token = LocalAPIServer.makeToken()
                let tokenURL =
                    tokenFile.map { URL(fileURLWithPath: $0) }
                    ?? vaultURL.deletingLastPathComponent().appendingPathComponent("api-token")
                // A private file renamed over whatever was there (a symbolic link is replaced, not followed).
                do {
                    try PrivateFile.replace(at: tokenURL, contents: Array(token.utf8))
                } catch let error as PrivateFileError {
                    throw Output.failure("cannot write the token file: \(error.message)")
                }
                defer { try? FileManager.default.removeItem(at: tokenURL) }
                let coordinator = UpgradeService(
                    vault: vault,
                    environment: HTTPUpgradeEnvironment(),
                    host: TerminalHost()
                )
                let server = LocalAPIServer(token: token) { request in
                    let result = await coordinator.inAppRequest(request)
                    Output.error(
                        "keyhaven: in-app \(request.type.rawValue) for \(request.user) on \(request.serviceIdentifier): \(result.status.rawValue)"
                    )
                    return result
                }
                try await server.run(port: port) { bound in
                    Output.error(
                        "keyhaven: local API on http://127.0.0.1:\(bound) (token in \(tokenURL.path)); Ctrl-C stops"
                    )
                }
            }
        }
    }
}
