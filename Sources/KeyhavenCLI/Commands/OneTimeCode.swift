import ArgumentParser
import Foundation
import OneTimeCodes
import Vault

extension Keyhaven {
    struct OneTimeCode: VaultCommand {
        static let configuration = CommandConfiguration(
            commandName: "otp",
            abstract: "Print an account's current one-time code and how long it stays valid.",
            discussion: """
                The code is computed from the TOTP secret stored with the account (RFC 6238; the \
                digits, period and algorithm of an otpauth:// URI are used). --json prints \
                {"code": "123456", "expiresIn": 17}.

                Examples:
                  keyhaven otp github.com
                  keyhaven otp github.com/alice --json
                  keyhaven copy github.com --otp
                """
        )
        @OptionGroup var options: VaultOptions
        @ParentCommand var root: Keyhaven
        @OptionGroup var selection: AccountSelection
        @Flag(name: .long, help: "Print JSON: {\"code\", \"expiresIn\"} (seconds).") var json = false

        struct Report: Encodable {
            var code: String
            var expiresIn: Int
        }

        func run() async throws {
            let credential = try await account(selection.account, in: try await openStore())
            let code = try OneTimeCodeReading.current(for: credential, named: selection.account)
            if json {
                print(try Output.jsonLine(Report(code: code.code, expiresIn: code.expiresIn)))
            } else {
                print(code.code)
                Output.error("valid for \(code.expiresIn) s")
            }
        }
    }
}

/// The current one-time code of a credential, by the command's clock.
enum OneTimeCodeReading {
    static func current(for credential: Credential, named name: String) throws -> (code: String, expiresIn: Int) {
        guard let secret = credential.totp else {
            throw Output.failure(
                "\(credential.content.displayTitle) has no one-time code secret; add one with "
                    + "`keyhaven edit \(name) --totp SECRET` (base32 or an otpauth:// URI)"
            )
        }
        let totp: TOTP
        do {
            totp = try TOTP(secret: secret)
        } catch {
            throw Output.failure(
                "the one-time code secret of \(credential.content.displayTitle) cannot be used (\(error.message)); "
                    + "replace it with `keyhaven edit \(name) --totp SECRET`"
            )
        }
        let now = CommandIO.current.now
        return (totp.code(at: now), totp.secondsRemaining(at: now))
    }
}
