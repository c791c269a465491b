import AccountModification
import ArgumentParser
import AutoFill
import BreachCheck
import Foundation
import KeyhavenApp
import KeyhavenWebApp
import OneTimeCodes
import PasswordStrength
import SecurityRecommendations
import UpgradeHTTP
import Vault
import _KeyhavenSupport

extension Keyhaven {
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "See Keyhaven work end to end, on a throwaway vault and a local example service.",
            discussion: """
                Runs a Sign in with Keyhaven provider and starts shiny (the example service, the \
                `shiny` executable next to keyhaven, or $KEYHAVEN_SHINY) as a process of its own on a \
                free loopback port, registered with the provider. Creates a temporary vault with weak, \
                reused and breached passwords (two accounts on shiny, one protected by an \
                authenticator code), audits it, upgrades both shiny accounts in one step each — the \
                second through shiny's confirmation page, which the demo fills in as you would — \
                then signs Keyhaven in to the provider and switches a third account to Sign in with \
                Keyhaven (its password stops working), proves the new passwords sign in and the old \
                ones no longer do, and prints before and after. It ends with the web app's URL on the same \
                vault (`keyhaven ui`; on a terminal it waits for Enter while you look). Nothing outside \
                a temporary folder is touched, and shiny is stopped on the way out; exits 0 when every \
                check passes.
                """
        )

        static let masterPassword = "demo master password"

        @Flag(
            name: .long,
            help: "Keep the temporary folder (vault, breach index, shiny's team key) and print its path."
        )
        var keep = false

        func run() async throws {
            let shinyExecutable = try ShinyProcess.locate()
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "keyhaven-demo-\(UUID().uuidString.prefix(8))"
            )
            // Private: it holds shiny's team key.
            try PrivateFile.createDirectory(at: folder)
            defer { if !keep { try? FileManager.default.removeItem(at: folder) } }
            let say: @Sendable (String) -> Void = { print($0) }

            // 1. A Sign in with Keyhaven provider, and shiny as a process of its own, registered with it.
            let provider = try await startProvider(folder: folder, say: say)
            defer { provider.server.cancel() }
            try await ShinyProcess.run(shinyExecutable, arguments: provider.shinyArguments) { shiny in
                say(
                    "\n▶ shiny, an example service, is running at \(shiny.origin) (\(shinyExecutable.path), pid \(shiny.pid))"
                )
                try await registerShiny(shiny, with: provider, say: say)
                try await showcase(shiny: shiny, provider: provider, folder: folder, say: say)
            }
        }

        /// Everything after the set-up, against the running shiny and provider.
        func showcase(
            shiny: ShinyProcess,
            provider: DemoProvider,
            folder: URL,
            say: @escaping @Sendable (String) -> Void
        )
            async throws
        {
            let origin = shiny.origin
            let alicePassword = "Password1234"
            let bobPassword = "Welcome12345"
            try await shiny.signUp(user: "alice", password: alicePassword)
            let bobSecret = try await shiny.signUpWithAuthenticator(user: "bob", password: bobPassword)
            say(
                "  accounts on shiny, through its sign-up API: alice (password only), bob (password + authenticator code)"
            )

            // 2. A vault with the usual problems.
            let vaultURL = folder.appendingPathComponent("vault.sqlite")
            let demoSession = KeyhavenSession(.init(vaultURL: vaultURL, idleLock: .infinity))
            try await demoSession.create(
                masterPassword: Self.masterPassword,
                kdf: .random(logN: KDFParameters.minimumLogN)
            )
            try await withUnlockedVault(demoSession) { vault in
                let alice = try vault.add(shiny.credential(user: "alice", password: alicePassword))
                let bob = try vault.add(shiny.credential(user: "bob", password: bobPassword, totp: bobSecret))
                // Reused, weak, breached, on plain http, and one strong one.
                let others = [
                    ("Code forge", "https://git.example.com/login", "alice", alicePassword),
                    ("Webmail", "https://mail.example.net", "alice@mail.example.net", "password1"),
                    ("Bank app", "androidapp://com.example.bank", "alice", "1234"),
                    ("Old intranet", "http://intranet.example.org/login", "admin", "v7#Lq2!xR9mTz4Wp"),
                    ("Library", "https://library.example.org", "alice", "gusty-Orbit-lantern-94"),
                ]
                for (title, service, user, password) in others {
                    try vault.add(
                        CredentialContent(title: title, services: [.init(service)], user: user, password: password)
                    )
                }
                say("▶ a temporary vault with 7 credentials at \(vaultURL.path)")

                // 3. A small offline breach index (the real one is built from HIBP's download).
                let source = folder.appendingPathComponent("pwned.txt")
                let breached = ["password1", "Password1234", "123456", "qwerty"].map {
                    "\(SHA1Digest(password: $0).hex):\(Int.random(in: 1000...90000))"
                }
                try PrivateFile.create(at: source, contents: Array(breached.joined(separator: "\n").utf8))
                let indexURL = folder.appendingPathComponent("pwned.khbi")
                _ = try BreachIndexBuilder().build(input: source, output: indexURL)
                let index = try BreachIndex(url: indexURL)

                let audit = AuditService(
                    breachSource: .index(index),
                    network: .init(probe: LoopbackProbe(), manifests: HTTPManifestReader())
                )
                let before = try await audit.run(demoSession).report
                say("\n▶ keyhaven audit (before)")
                printAudit(before)

                // 4. One-tap upgrades.
                let host = DemoHost(secret: bobSecret)
                let coordinator = UpgradeService(
                    vault: vault,
                    environment: HTTPUpgradeEnvironment(),
                    host: host,
                    pollInterval: .milliseconds(100)
                )
                say("\n▶ keyhaven upgrade \(origin) --user alice")
                let first = await coordinator.upgradeToStrongPassword(alice, service: origin)
                say("  \(describe(first))")
                say("\n▶ keyhaven upgrade \(origin) --user bob   (shiny asks bob to confirm with his code)")
                let second = await coordinator.upgradeToStrongPassword(bob, service: origin)
                say("  \(describe(second))")

                // 5. Sign in with Keyhaven.
                let signIn = try await signInPart(
                    vault: vault,
                    shiny: shiny,
                    provider: provider,
                    coordinator: coordinator,
                    say: say
                )

                // 6. Proof, by signing in to shiny as an app would.
                let newAlice = try vault.credential(alice).password ?? ""
                let newBob = try vault.credential(bob).password ?? ""
                // shiny takes each authenticator code once, and the current one may have confirmed bob's
                // upgrade: the next step's code (shiny allows one step of drift).
                let code = try TOTP(secret: bobSecret).code(at: Date().addingTimeInterval(30))
                var checks = signIn.checks
                checks.append(
                    (
                        "alice's new password signs in to shiny",
                        try await shiny.signsIn(user: "alice", password: newAlice)
                    )
                )
                checks.append(
                    (
                        "alice's old password no longer does",
                        try await !shiny.signsIn(user: "alice", password: alicePassword)
                    )
                )
                checks.append(
                    (
                        "bob's new password (with his code) signs in",
                        try await shiny.signsIn(user: "bob", password: newBob, code: code)
                    )
                )
                checks.append(
                    (
                        "bob's old password no longer does",
                        try await !shiny.signsIn(user: "bob", password: bobPassword, code: code)
                    )
                )
                checks.append(
                    (
                        "the old passwords are kept in the history",
                        try vault.history(alice).map(\.password) == [alicePassword]
                            && vault.history(bob).map(\.password) == [bobPassword]
                    )
                )
                say("\n▶ checks")
                for (label, passed) in checks {
                    say("  \(passed ? "✓" : "✗") \(label)")
                }

                let after = try await audit.run(demoSession).report
                say("\n▶ keyhaven audit (after)")
                printAudit(after)

                say("\n▶ before → after")
                let strength = StrengthEstimator.shared
                for (name, old, new) in [("alice@shiny", alicePassword, newAlice), ("bob@shiny", bobPassword, newBob)] {
                    say(
                        "  \(name): \(mask(old)) (strength \(strength.estimate(old).score)/4) → \(mask(new)) (strength \(strength.estimate(new).score)/4)"
                    )
                }
                say(
                    "  issues: \(before.summary.withIssues) → \(after.summary.withIssues) of \(after.summary.credentials) credentials"
                )
                if keep { say("\nKept \(folder.path)") }
                guard checks.allSatisfy(\.1), case .upgraded = first, case .upgraded = second, signIn.upgraded else {
                    throw Output.failure("the demo's checks did not all pass")
                }
                say("\nAll checks passed.")
            }
            try await openTheApp(on: vaultURL, say: say)
        }

        /// Ends the demo as a newcomer would go on: the same vault in the web app (`keyhaven ui`),
        /// served in this process while shiny still runs, so the recommendations' Upgrade buttons
        /// work. On a terminal the demo waits for Enter; otherwise it prints the URL and ends.
        func openTheApp(on vaultURL: URL, say: @escaping @Sendable (String) -> Void) async throws {
            let agent = AutoFillAgent(vaultURL: vaultURL, idleLock: .infinity)
            let web = WebApp(agent: agent, services: .http(environment: CommandIO.current.environment))
            // scrypt at full strength, on the session's own thread (not the cooperative pool).
            try await agent.unlock(masterPassword: Self.masterPassword)
            let ready = AsyncStream.makeStream(of: Int.self)
            let server = Task { try await web.serve(port: 0) { ready.continuation.yield($0) } }
            defer { server.cancel() }
            var iterator = ready.stream.makeAsyncIterator()
            guard await iterator.next() != nil else { throw Output.failure("the web app did not start") }
            say("\n▶ keyhaven ui — the same vault in the web app (master password: \(Self.masterPassword)):")
            say("  \(web.launchURL())")
            guard isatty(0) == 1 else { return }
            say("  Press Enter to end the demo (the app and shiny stop with it).")
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread {
                    _ = readLine()
                    done.resume()
                }.start()
            }
        }

        func mask(_ password: String) -> String {
            String(password.prefix(3)) + String(repeating: "•", count: max(0, password.count - 3))
        }

        func describe(_ result: UpgradeResult) -> String {
            switch result {
            case .upgraded(_, let substituted):
                return
                    "✓ upgraded: a new strong password is saved\(substituted ? " (chosen by the service)" : ""); the old one is in the history"
            case .failed(let reason, _): return "✗ not upgraded: \(reason)"
            case .pending(let reason): return "… unconfirmed: \(reason)"
            }
        }

        func printAudit(_ report: AuditReport) {
            for severity in AuditSeverity.allCases where severity != .none {
                let items = report.items.filter { $0.severity == severity }
                guard !items.isEmpty else { continue }
                print("  \(severity.title) (\(items.count))")
                for item in items {
                    var line = "    \(item.title): \(item.issues.map(\.rawValue).joined(separator: ", "))"
                    if let offer = item.actions.upgrade, offer.strongPassword { line += " — one-tap upgrade available" }
                    print(line)
                }
            }
            print("  no issues: \(report.summary.bySeverity[.none] ?? 0)")
        }
    }
}

/// Answers shiny's confirmation page as a person would: reads it, types the authenticator code.
struct DemoHost: ModificationHost {
    let secret: String

    func presentInterface(_ url: String) async {
        print("  shiny's page: \(url)")
        do {
            let page = try await DemoHTTP.get(url)
            guard page.status == 200, page.text.contains("id=\"code\"") else {
                print("  (the page did not ask for a code)")
                return
            }
            let code = try TOTP(secret: secret).code(at: Date())
            // As a browser posts the page's form: with its CSRF token and the cookie that goes with it.
            let answer = try await DemoHTTP.post(
                url,
                form: [("code", code), ("csrf", page.csrfToken ?? "")],
                cookies: page.cookies
            )
            print(
                "  the demo entered bob's authenticator code: \(answer.text.contains("Your password was changed") ? "accepted" : "rejected")"
            )
        } catch {
            print("  (could not answer the page: \(error))")
        }
    }

    func obtainSignInAuthorization(_ request: SignInRequest) async -> SignInAuthorization {
        SignInAuthorization(error: "not_part_of_this_demo")
    }
}

/// Probes only loopback services (the demo's shiny): nothing leaves the machine.
struct LoopbackProbe: WellKnownProbe {
    let probe = HTTPWellKnownProbe()

    func get(_ url: String) async -> ProbeResponse? {
        guard url.hasPrefix("http://127.0.0.1:") else { return nil }
        return await probe.get(url)
    }
}
