import ArgumentParser
import Foundation
import IdentityProvider
import KeyhavenJOSE
import _KeyhavenSupport

struct ProviderTeam: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "team",
        abstract: "Register developer teams and their client-secret keys.",
        subcommands: [Add.self, List.self, Key.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register a team; prints its id.")
        @OptionGroup var provider: ProviderOptions
        @Argument(help: "The team's name.") var name: String
        @Option(name: .long, help: "Its id (10 uppercase letters or digits; generated when absent).") var id: String?

        func run() async throws {
            try await provider.withOpened { provider in
                let team = try await administering { try await provider.createTeam(id: id, name: name) }
                print(team.id)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the teams.")
        @OptionGroup var provider: ProviderOptions
        @Flag(name: .long, help: "JSON output.") var json = false

        func run() async throws {
            try await provider.withOpened { provider in
                let teams = try await administering { try await provider.teams() }
                if json { return print(try Output.json(teams)) }
                for team in teams { print("\(team.id)\t\(team.name)") }
            }
        }
    }

    struct Key: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A team's ES256 keys for signing client_secret JWTs.",
            subcommands: [Create.self, AddKey.self]
        )

        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Create a key pair: registers the public key, writes the private .p8 file, prints the key id."
            )
            @OptionGroup var provider: ProviderOptions
            @Argument(help: "The team id.") var team: String
            @Option(name: .long, help: "Where to write the private key (PKCS#8 PEM, mode 0600).") var output: String

            func run() async throws {
                // Refused before a key is registered; the create below refuses anything that appears meanwhile.
                if FileManager.default.fileExists(atPath: output)
                    || (try? FileManager.default.destinationOfSymbolicLink(atPath: output)) != nil
                {
                    throw Output.failure("\(output) already exists; choose another name")
                }
                try await provider.withOpened { provider in
                    let key = try await administering { try await provider.createTeamKey(teamId: team) }
                    let written = Result { () throws(PrivateFileError) in
                        try PrivateFile.create(
                            at: URL(fileURLWithPath: output),
                            contents: Array(key.pemRepresentation.utf8)
                        )
                    }
                    if case .failure(let error) = written {
                        throw Output.failure(
                            "\(error.message); the key \(key.kid) is registered, its private key was not saved: "
                                + "create another"
                        )
                    }
                    print(key.kid)
                }
            }
        }

        struct AddKey: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "add",
                abstract: "Register an existing public key (PEM) under a key id."
            )
            @OptionGroup var provider: ProviderOptions
            @Argument(help: "The team id.") var team: String
            @Option(name: .customLong("key-id"), help: "The kid its client secrets carry.") var keyId: String
            @Option(name: .customLong("public-key"), help: "A PEM file with the P-256 public key.") var publicKey:
                String

            func run() async throws {
                try await provider.withOpened { provider in
                    guard let pem = try? String(contentsOfFile: publicKey, encoding: .utf8) else {
                        throw Output.failure("cannot read \(publicKey)")
                    }
                    try await administering {
                        try await provider.addTeamKey(
                            teamId: team,
                            keyId: keyId,
                            publicKey: try ES256PublicKey(pemRepresentation: pem)
                        )
                    }
                    print(keyId)
                }
            }
        }
    }
}

struct ProviderService: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "service",
        abstract: "Register services (client ids) that sign people in.",
        subcommands: [Add.self, List.self, Transfer.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register a service.")
        @OptionGroup var provider: ProviderOptions
        @Argument(help: "The client id (a Services ID such as com.example.web).") var clientId: String
        @Option(name: .long, help: "The owning team's id.") var team: String
        @Option(name: .long, help: "The name people see on the consent page.") var name: String
        @Option(name: .customLong("redirect-uri"), help: "A redirect URI (repeatable, at most 10; https).")
        var redirectURIs: [String] = []
        @Option(name: .customLong("notification-url"), help: "Where server-to-server notifications go (https).")
        var notificationURL: String?

        func run() async throws {
            try await provider.withOpened { provider in
                try await administering {
                    try await provider.registerClient(
                        id: clientId,
                        teamId: team,
                        name: name,
                        redirectURIs: redirectURIs,
                        notificationURL: notificationURL
                    )
                }
                print(clientId)
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the services.")
        @OptionGroup var provider: ProviderOptions
        @Flag(name: .long, help: "JSON output.") var json = false

        func run() async throws {
            try await provider.withOpened { provider in
                let clients = try await administering { try await provider.clients() }
                if json { return print(try Output.json(clients)) }
                for client in clients {
                    print(
                        "\(client.id)\t\(client.teamId)\t\(client.name)\t\(client.redirectURIs.joined(separator: " "))"
                    )
                }
            }
        }
    }

    struct Transfer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move a service to another team (its users migrate through /auth/usermigrationinfo)."
        )
        @OptionGroup var provider: ProviderOptions
        @Argument(help: "The client id.") var clientId: String
        @Option(name: .long, help: "The recipient team's id.") var to: String

        func run() async throws {
            try await provider.withOpened { provider in
                try await administering { try await provider.transferClient(clientId, toTeam: to) }
                print("\(clientId) now belongs to \(to)")
            }
        }
    }
}

struct ProviderUser: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Create accounts at the provider.",
        subcommands: [Add.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an account; the password comes from $KEYHAVEN_IDP_USER_PASSWORD or a prompt.",
            discussion: "With --totp, prints the authenticator secret (base32) once."
        )
        @OptionGroup var provider: ProviderOptions
        @Argument(help: "The e-mail address.") var email: String
        @Option(name: .customLong("first-name")) var firstName: String?
        @Option(name: .customLong("last-name")) var lastName: String?
        @Flag(name: .long, help: "Require a one-time code at sign-in.") var totp = false

        func run() async throws {
            let password =
                try CommandIO.current.environment["KEYHAVEN_IDP_USER_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
                ?? Terminal.askSecret("Password for \(email): ", confirm: true)
            try await provider.withOpened { provider in
                let (user, secret) = try await administering {
                    try await provider.createUser(
                        email: email,
                        password: password,
                        firstName: firstName,
                        lastName: lastName,
                        totp: totp
                    )
                }
                print(user.email)
                if let secret { print("authenticator secret: \(secret)") }
            }
        }
    }
}

struct ProviderKeys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "The RS256 keys that sign identity tokens and notifications.",
        discussion: """
            `rotate` adds a key that signs from now on; older keys stay published at /auth/keys (tokens \
            they signed keep verifying) until `retire`.
            """,
        subcommands: [List.self, Rotate.self, Retire.self, Speed.self]
    )

    struct Speed: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "How many RS256 signatures per second this machine makes (the ceiling of /auth/token).",
            discussion: "Signs a typical id_token with a fresh 2048-bit key on every core for --seconds."
        )
        @Option(name: .long, help: "How long to measure.") var seconds = 3.0
        @Option(name: .long, help: "Threads (default: one per core).") var threads: Int?
        @Flag(name: .long, help: "JSON output.") var json = false

        func run() async throws {
            let key = try RSASigningKey.generate(kid: "SPEEDTEST1")
            let claims = IdentityTokenClaims(
                iss: "https://idp.example.com",
                sub: "001234.0123456789abcdef0123456789abcdef.0001",
                aud: "com.example.web",
                iat: 1_800_000_000,
                exp: 1_800_086_400,
                nonce_supported: true,
                email: "someone@example.com",
                email_verified: BoolClaim(true)
            )
            let count = threads ?? ProcessInfo.processInfo.activeProcessorCount
            let deadline = Date().addingTimeInterval(seconds)
            let start = Date()
            let total = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        await Self.signLoop(key: key, claims: claims, until: deadline)
                    }
                }
                return await group.reduce(0, +)
            }
            let rate = Double(total) / Date().timeIntervalSince(start)
            if json {
                print(try Output.jsonLine(["signatures_per_second": rate.rounded(), "threads": Double(count)]))
            } else {
                print("\(Int(rate.rounded())) RS256 signatures/s on \(count) thread(s)")
            }
        }

        /// Signs on a thread of its own (not the cooperative pool) until `deadline`.
        static func signLoop(key: RSASigningKey, claims: IdentityTokenClaims, until deadline: Date) async -> Int {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    var signed = 0
                    while Date() < deadline {
                        if (try? JWS.sign(claims, with: key)) != nil { signed += 1 }
                    }
                    continuation.resume(returning: signed)
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The published key ids, the signing one first.")
        @OptionGroup var provider: ProviderOptions
        func run() async throws {
            try await provider.withOpened { provider in
                for kid in try await administering({ try await provider.signingKeyIDs() }) { print(kid) }
            }
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a new signing key; prints its id.")
        @OptionGroup var provider: ProviderOptions
        func run() async throws {
            try await provider.withOpened { provider in
                print(try await administering { try await provider.rotateSigningKey() })
            }
        }
    }

    struct Retire: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop publishing a key.")
        @OptionGroup var provider: ProviderOptions
        @Argument(help: "The key id.") var kid: String
        func run() async throws {
            try await provider.withOpened { provider in
                try await administering { try await provider.retireSigningKey(kid) }
                print("retired \(kid)")
            }
        }
    }
}

struct ProviderOutbox: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox",
        abstract: "Server-to-server notifications: pending, delivered, attempts."
    )
    @OptionGroup var provider: ProviderOptions
    @Flag(name: .long, help: "JSON output.") var json = false

    func run() async throws {
        try await provider.withOpened { provider in
            let summary = try await administering { try await provider.outboxSummary() }
            if json { return print(try Output.jsonLine(summary)) }
            print(
                "pending \(summary.pending), delivered \(summary.delivered), attempts \(summary.attempts), "
                    + "abandoned \(summary.abandoned)"
            )
        }
    }
}
