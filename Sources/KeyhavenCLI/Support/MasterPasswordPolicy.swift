import ArgumentParser
import PasswordStrength
import Vault

/// What `init` and `passwd` accept as a master password: zxcvbn scores it at least 3 of 4 ("safely
/// unguessable"), unless `--force-weak-password`.
enum MasterPasswordPolicy {
    static let minimumScore = 3

    /// Refuses a weak master password with zxcvbn's feedback; with `force`, warns and accepts it.
    static func check(_ password: String, force: Bool) throws {
        let estimate = StrengthEstimator.shared.estimate(password, userInputs: ["keyhaven"])
        guard estimate.score < minimumScore else { return }
        var message =
            "the master password is too easy to guess (zxcvbn score \(estimate.score)/4; at least \(minimumScore) is required)"
        if !estimate.feedback.warning.isEmpty {
            message += ": \(estimate.feedback.warning)"
        }
        if !estimate.feedback.suggestions.isEmpty {
            message += " " + estimate.feedback.suggestions.joined(separator: " ")
        }
        if force {
            Output.error("keyhaven: warning: \(message) Kept because of --force-weak-password.")
            return
        }
        throw Output.failure("\(message) Choose a stronger one, or pass --force-weak-password to keep it.")
    }
}

/// The options `init` and `passwd` share for the master password they set: its key derivation and
/// its strength check.
struct NewMasterPasswordOptions: ParsableArguments {
    @Option(
        name: .customLong("scrypt-log-n"),
        help: ArgumentHelp(
            "Use N = 2^n instead of calibrating. Below 17 is refused without --insecure-kdf (tests only).",
            valueName: "n"
        )
    )
    var scryptLogN: Int?

    @Flag(
        name: .customLong("force-weak-password"),
        help: "Accept a master password zxcvbn scores below 3 of 4."
    )
    var forceWeakPassword = false

    /// `--scrypt-log-n` checked against the floor (``KDFChoice``); nil: calibrate.
    func kdf(insecure: Bool) throws -> KDFParameters? {
        try KDFChoice.parameters(scryptLogN: scryptLogN, insecure: insecure)
    }

    /// The master password policy, `--force-weak-password` applied.
    func check(_ password: String) throws {
        try MasterPasswordPolicy.check(password, force: forceWeakPassword)
    }
}

/// The scrypt parameters `init` and `passwd` use: `--scrypt-log-n` — below the floor only with
/// `--insecure-kdf` (and then with a warning) — or nil: calibrate (at or above the floor).
enum KDFChoice {
    static func parameters(scryptLogN: Int?, insecure: Bool) throws -> KDFParameters? {
        guard let scryptLogN else { return nil }
        guard (10...22).contains(scryptLogN) else {
            throw ValidationError("--scrypt-log-n must be between 10 and 22")
        }
        if scryptLogN < KDFParameters.minimumLogN {
            guard insecure else {
                throw Output.failure(
                    "--scrypt-log-n \(scryptLogN) is below Keyhaven's floor of N=2^\(KDFParameters.minimumLogN) "
                        + "(r=8, p=1); leave it out to calibrate, or add --insecure-kdf (tests only)",
                    exitCode: 64
                )
            }
            Output.error(
                "keyhaven: warning: N=2^\(scryptLogN) is below Keyhaven's floor of N=2^\(KDFParameters.minimumLogN): "
                    + "the vault is much cheaper to attack (--insecure-kdf)"
            )
        }
        return .random(logN: scryptLogN)
    }
}
