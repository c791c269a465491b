import ArgumentParser
import Crypto
import Foundation
import IdentityProvider
import IdentityProviderPostgres
import _KeyhavenSupport

/// The file holding the provider's secrets key (32 bytes, base64), which seals its signing keys,
/// access-token key and one-time-code secrets in the database.
struct SecretsKeyFile {
    var path: String
    /// Named with `--secrets-key-file` or `$KEYHAVEN_IDP_SECRETS_KEY_FILE`: never created, it must exist.
    var given: Bool

    /// Where `keyhaven idp secrets rotate` writes the new key until the database is re-sealed.
    var pendingPath: String { path + ".new" }

    /// The key in the file at `path`. A file others can read is made private, with a warning.
    static func read(_ path: String) throws -> SymmetricKey {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw Output.failure("cannot read the secrets key file \(path)")
        }
        if let warning = PrivateFile.restrict(path) { Output.error("keyhaven: warning: \(warning)") }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let bytes = Data(base64Encoded: trimmed) ?? Base64URL.decode(trimmed).map({ Data($0) }), bytes.count == 32
        else {
            throw Output.failure("the secrets key file \(path) must hold 32 bytes in base64")
        }
        return SymmetricKey(data: bytes)
    }

    /// A new random key written to a new private file at `path` (0600 from the first byte; its
    /// folder 0700 when created).
    static func create(_ path: String) throws -> SymmetricKey {
        let key = SymmetricKey(size: .bits256)
        let encoded = key.withUnsafeBytes { Data($0).base64EncodedString() } + "\n"
        let url = URL(fileURLWithPath: path)
        do {
            try PrivateFile.createDirectory(at: url.deletingLastPathComponent())
            try PrivateFile.create(at: url, contents: Array(encoded.utf8))
        } catch {
            throw Output.failure("cannot create the secrets key file: \(error.message)")
        }
        return key
    }
}

extension ProviderOptions {
    /// The secrets key file: the one given, else `idp.secrets-key` beside an SQLite database
    /// (`NAME.secrets-key` for `NAME.sqlite`), else (PostgreSQL) `idp-postgres.secrets-key` in
    /// Keyhaven's data folder.
    var keyFile: SecretsKeyFile {
        let environment = CommandIO.current.environment
        if let given = secretsKeyFile ?? environment["KEYHAVEN_IDP_SECRETS_KEY_FILE"], !given.isEmpty {
            return SecretsKeyFile(path: (given as NSString).expandingTildeInPath, given: true)
        }
        if isPostgres {
            let data =
                environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
                ?? (NSHomeDirectory() as NSString).appendingPathComponent(".local/share")
            return SecretsKeyFile(
                path: (data as NSString).appendingPathComponent("keyhaven/idp-postgres.secrets-key"),
                given: false
            )
        }
        let database = URL(fileURLWithPath: location)
        let name = database.deletingPathExtension().lastPathComponent
        return SecretsKeyFile(
            path: database.deletingLastPathComponent().appendingPathComponent(name + ".secrets-key").path,
            given: false
        )
    }

    var isPostgres: Bool { location.hasPrefix("postgres://") || location.hasPrefix("postgresql://") }

    /// The secrets key; a default key file that does not exist yet is created (so nothing is
    /// ever stored in the clear). `created` tells whether this run made it.
    func loadSecretsKey() throws -> (key: SymmetricKey, created: Bool) {
        let file = keyFile
        if file.given || FileManager.default.fileExists(atPath: file.path) {
            return (try SecretsKeyFile.read(file.path), false)
        }
        do {
            return (try SecretsKeyFile.create(file.path), true)
        } catch {
            // Created by another command meanwhile.
            if FileManager.default.fileExists(atPath: file.path) { return (try SecretsKeyFile.read(file.path), false) }
            throw error
        }
    }

    /// `error` from preparing the provider, for the operator. A key file this run created for a
    /// database sealed with another key is removed again (it never sealed anything).
    func explained(_ error: any Error, createdKey: Bool) -> any Error {
        guard let storage = error as? StorageError,
            storage.code == .wrongSecretsKey || storage.code == .secretsKeyRequired
        else { return error }
        let file = keyFile
        if createdKey { try? FileManager.default.removeItem(atPath: file.path) }
        var message =
            "the provider's secrets are sealed with another secrets key than "
            + (createdKey ? "a new one (there was none at \(file.path))" : "the one in \(file.path)")
            + ": give the key that sealed them with --secrets-key-file"
        if FileManager.default.fileExists(atPath: file.pendingPath) {
            message += " (a rotation was interrupted: `keyhaven idp secrets rotate` finishes it)"
        }
        return Output.failure(message)
    }
}

struct ProviderSecrets: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secrets",
        abstract: "The secrets key that seals the provider's signing keys and secrets in its database.",
        discussion: """
            Every `keyhaven idp` command seals the provider's signing keys, its access-token key and \
            one-time-code secrets with the secrets key: --secrets-key-file, else idp.secrets-key beside \
            the SQLite database (NAME.secrets-key for NAME.sqlite), else, for PostgreSQL, \
            idp-postgres.secrets-key in Keyhaven's data folder. When that default file does not exist, \
            the first command creates it (mode 0600) and seals what was stored in the clear. Keep it \
            apart from the database's backups; every instance on one PostgreSQL database needs the \
            same file.
            """,
        subcommands: [Rotate.self]
    )

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-seal every secret under a new secrets key, in one transaction.",
            discussion: """
                Stop every `keyhaven idp serve` on the database first, and start them again with the \
                new key file afterwards (copy it to the other machines). The new key is written to \
                KEYFILE.new (0600) first, the database re-sealed in one transaction, then KEYFILE.new \
                renamed over KEYFILE: the old key is gone, so database backups made before need a copy \
                of it you kept. If this is interrupted, run it again: it finishes a rotation whose \
                transaction committed, and discards one whose transaction did not.
                """
        )
        @OptionGroup var provider: ProviderOptions

        func run() async throws {
            let file = provider.keyFile
            let (key, created) = try provider.loadSecretsKey()
            var configuration = try provider.configuration()
            configuration.secretsKey = key
            let opened = IdentityProvider(configuration: configuration, unpreparedDatabase: try provider.openDatabase())
            let run = { () async throws -> Void in
                if FileManager.default.fileExists(atPath: file.pendingPath) {
                    let pending = try SecretsKeyFile.read(file.pendingPath)
                    if try await opened.secretsKeyMatches(pending) {
                        try Self.promote(file)
                        return print("finished the interrupted rotation: \(file.path) holds the new key")
                    }
                    try FileManager.default.removeItem(atPath: file.pendingPath)
                    Output.error("keyhaven: discarded \(file.pendingPath), left by a rotation that did not complete")
                }
                do {
                    try await opened.prepare()
                } catch {
                    throw provider.explained(error, createdKey: created)
                }
                let newKey = try SecretsKeyFile.create(file.pendingPath)
                let count: Int
                do {
                    count = try await opened.resealSecrets(under: newKey)
                } catch {
                    try? FileManager.default.removeItem(atPath: file.pendingPath)
                    throw Output.failure("the secrets were not re-sealed (nothing changed): \(error)")
                }
                try Self.promote(file)
                print("re-sealed \(count) secrets under a new key in \(file.path); restart the provider with it")
            }
            if let postgres = opened.database as? PostgresDatabase {
                try await postgres.withRunning { try await run() }
            } else {
                try await run()
            }
        }

        /// Renames the new key over the old one.
        static func promote(_ file: SecretsKeyFile) throws {
            do {
                try PrivateFile.rename(URL(fileURLWithPath: file.pendingPath), over: URL(fileURLWithPath: file.path))
            } catch {
                throw Output.failure(
                    "the database is sealed with the key in \(file.pendingPath), which could not replace "
                        + "\(file.path): \(error.message); move it there yourself"
                )
            }
        }
    }
}
