import ArgumentParser
import AutoFill
import Crypto
import Foundation
import KeyhavenAgent
import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#endif

/// Keyhaven's browser extension as shipped in the binary, and facts derived from it.
enum BrowserExtension {
    /// The native-messaging host's name (the extension's `connectNative` argument).
    static let hostName = "dev.keyhaven.autofill"
    /// Firefox's id for the extension (`browser_specific_settings.gecko.id`).
    static let geckoID = "autofill@keyhaven.dev"

    static var manifest: [String: Any] {
        guard let text = embeddedBrowserExtension.first(where: { $0.path == "manifest.json" })?.contents,
            let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        else { return [:] }
        return object
    }

    /// Chromium's id for the extension: the first 128 bits of SHA-256 of its public `key`, in hex
    /// written with the letters a–p (how Chromium names an extension with a fixed key).
    static var chromiumID: String {
        guard let key = manifest["key"] as? String, let der = Data(base64Encoded: key) else { return "" }
        let letters = Array("abcdefghijklmnop")
        return SHA256.hash(data: der).prefix(16).map { "\(letters[Int($0 >> 4)])\(letters[Int($0 & 0xF)])" }.joined()
    }

    /// Callers `browser-host` accepts: our extension in Chromium and Firefox, and
    /// `$KEYHAVEN_BROWSER_ALLOWED_ORIGINS` (comma-separated) for another build of it.
    static func allowedCallers(environment: [String: String]) -> Set<String> {
        var allowed: Set<String> = ["chrome-extension://\(chromiumID)/", geckoID]
        for extra in (environment["KEYHAVEN_BROWSER_ALLOWED_ORIGINS"] ?? "").split(separator: ",") {
            allowed.insert(extra.trimmingCharacters(in: .whitespaces))
        }
        return allowed
    }

    /// The files for `browser`: Firefox gets `background.scripts`, no `key` and no
    /// `webAuthenticationProxy` (a Chromium API; Firefox's passkeys go through the page world).
    static func files(for browser: BrowserKind) throws -> [(path: String, contents: String)] {
        guard browser == .firefox else { return embeddedBrowserExtension }
        var manifest = self.manifest
        manifest["key"] = nil
        manifest["permissions"] = (manifest["permissions"] as? [String] ?? []).filter { $0 != "webAuthenticationProxy" }
        var background = manifest["background"] as? [String: Any] ?? [:]
        if let worker = background["service_worker"] as? String {
            // A background script has no importScripts: what the worker imports before its own
            // code is listed first, what it imports at its end (autofill.js, passkeys.js) after it.
            func shipped(_ names: [String]) -> [String] {
                names.filter { name in embeddedBrowserExtension.contains { $0.path == name } }
            }
            background["scripts"] = shipped(["crypto.js"]) + [worker] + shipped(["autofill.js", "passkeys.js"])
            background["service_worker"] = nil
        }
        manifest["background"] = background
        // `use_dynamic_url` is Chromium's (a per-session URL for the in-page frame); Firefox already
        // gives each installation its own moz-extension:// id.
        if let resources = manifest["web_accessible_resources"] as? [[String: Any]] {
            manifest["web_accessible_resources"] = resources.map { entry in
                entry.filter { $0.key != "use_dynamic_url" }
            }
        }
        let data = try JSONSerialization.data(withJSONObject: manifest, options: [.prettyPrinted, .sortedKeys])
        return embeddedBrowserExtension.map { file in
            file.path == "manifest.json" ? (file.path, String(decoding: data, as: UTF8.self) + "\n") : file
        }
    }
}

/// The browsers `keyhaven browser install` knows, and where each reads native-messaging hosts.
enum BrowserKind: String, ExpressibleByArgument, CaseIterable {
    case chromium, chrome, brave, edge, vivaldi, firefox

    /// The per-user configuration directory (Chromium family: the default user-data dir).
    func userDirectory(home: String, config: String) -> String {
        switch self {
        case .chromium: "\(config)/chromium/NativeMessagingHosts"
        case .chrome: "\(config)/google-chrome/NativeMessagingHosts"
        case .brave: "\(config)/BraveSoftware/Brave-Browser/NativeMessagingHosts"
        case .edge: "\(config)/microsoft-edge/NativeMessagingHosts"
        case .vivaldi: "\(config)/vivaldi/NativeMessagingHosts"
        case .firefox: "\(home)/.mozilla/native-messaging-hosts"
        }
    }

    var systemDirectory: String {
        switch self {
        case .chromium: "/etc/chromium/native-messaging-hosts"
        case .chrome: "/etc/opt/chrome/native-messaging-hosts"
        case .brave: "/etc/opt/chrome/native-messaging-hosts"
        case .edge: "/etc/opt/edge/native-messaging-hosts"
        case .vivaldi: "/etc/opt/vivaldi/native-messaging-hosts"
        case .firefox: "/usr/lib/mozilla/native-messaging-hosts"
        }
    }
}

extension Keyhaven {
    struct Browser: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "AutoFill in Chromium-family browsers and Firefox: install, pair, list pairings.",
            discussion: """
                Setting up AutoFill, after `keyhaven agent` runs and is unlocked:
                  keyhaven browser install --browser chromium
                  keyhaven browser extension --output ~/keyhaven-extension
                  (load that folder as an unpacked extension, click Keyhaven's icon, then Pair)
                  keyhaven browser pair          # prints the code to type into the extension
                """,
            subcommands: [Install.self, ExtensionFiles.self, Pair.self, Pairings.self]
        )

        struct Install: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Register `keyhaven browser-host` with a browser (its native-messaging manifest).",
                discussion: """
                    Writes \(BrowserExtension.hostName).json, and a small launcher that runs this \
                    keyhaven's `browser-host`, where the browser reads them, and prints the path. \
                    Chromium-family browsers read the directory of their user-data dir: with a custom \
                    profile (--user-data-dir), it goes into DIR/NativeMessagingHosts/. --system writes \
                    the system-wide directory (needs root).
                    """
            )
            @Option(name: .long, help: "The browser: \(BrowserKind.allCases.map(\.rawValue).joined(separator: ", ")).")
            var browser: BrowserKind
            @Option(name: .long, help: ArgumentHelp("A Chromium user-data dir (a custom profile).", valueName: "dir"))
            var userDataDir: String?
            @Flag(name: .long, help: "Install for every user of this machine.") var system = false
            @Option(
                name: .long,
                help: ArgumentHelp(
                    "An agent socket other than the default, baked into the launcher.",
                    valueName: "path"
                )
            )
            var socket: String?

            func validate() throws {
                if userDataDir != nil && (system || browser == .firefox) {
                    throw ValidationError("--user-data-dir is for Chromium-family browsers and not with --system")
                }
            }

            func run() async throws {
                let environment = CommandIO.current.environment
                let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
                let config = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "\(home)/.config"
                let directory =
                    system
                    ? browser.systemDirectory
                    : userDataDir.map { "\(($0 as NSString).expandingTildeInPath)/NativeMessagingHosts" }
                        ?? browser.userDirectory(home: home, config: config)
                guard let binary = CommandIO.current.executable?.path else {
                    throw Output.failure("cannot tell where this keyhaven binary is")
                }
                let launcher = "\(directory)/\(BrowserExtension.hostName)-host"
                var script =
                    "#!/bin/sh\n# Written by `keyhaven browser install`: the browser starts this for Keyhaven's extension.\n"
                if let socket {
                    script += "KEYHAVEN_AGENT_SOCKET=\(shellQuoted(socket)); export KEYHAVEN_AGENT_SOCKET\n"
                }
                script += "exec \(shellQuoted(binary)) browser-host \"$@\"\n"
                var manifest: [String: Any] = [
                    "name": BrowserExtension.hostName,
                    "description": "Keyhaven AutoFill (relays to keyhaven agent)",
                    "path": launcher,
                    "type": "stdio",
                ]
                if browser == .firefox {
                    manifest["allowed_extensions"] = [BrowserExtension.geckoID]
                } else {
                    manifest["allowed_origins"] = ["chrome-extension://\(BrowserExtension.chromiumID)/"]
                }
                let path = "\(directory)/\(BrowserExtension.hostName).json"
                do {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                    try Data(script.utf8).write(to: URL(fileURLWithPath: launcher), options: .atomic)
                    chmod(launcher, 0o755)
                    let data = try JSONSerialization.data(
                        withJSONObject: manifest,
                        options: [.prettyPrinted, .sortedKeys]
                    )
                    try data.write(to: URL(fileURLWithPath: path), options: .atomic)
                } catch {
                    throw Output.failure("cannot write into \(directory): \(error.localizedDescription)")
                }
                print(path)
                Output.error(
                    "Installed the native-messaging host for \(browser.rawValue); it runs \(binary) browser-host."
                )
            }
        }

        struct ExtensionFiles: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "extension",
                abstract: "Write Keyhaven's browser extension (unpacked) into a directory.",
                discussion: """
                    The extension ships inside keyhaven. Chromium: load the directory at \
                    chrome://extensions (Developer mode → Load unpacked); its id is always \
                    \(BrowserExtension.chromiumID). Firefox (--browser firefox): about:debugging → \
                    Load Temporary Add-on, or zip it as \(BrowserExtension.geckoID).xpi.
                    """
            )
            @Option(
                name: .long,
                help: ArgumentHelp("The directory (created; existing files are replaced).", valueName: "dir")
            )
            var output: String
            @Option(name: .long, help: "chromium (any Chromium-family browser) or firefox.") var browser: BrowserKind =
                .chromium

            func run() async throws {
                let root = URL(fileURLWithPath: (output as NSString).expandingTildeInPath)
                let files = try BrowserExtension.files(for: browser)
                guard !files.isEmpty else { throw Output.failure("this keyhaven was built without its extension") }
                do {
                    for file in files {
                        let url = root.appendingPathComponent(file.path)
                        try FileManager.default.createDirectory(
                            at: url.deletingLastPathComponent(),
                            withIntermediateDirectories: true
                        )
                        try Data(file.contents.utf8).write(to: url, options: .atomic)
                    }
                } catch {
                    throw Output.failure("cannot write the extension into \(root.path): \(error.localizedDescription)")
                }
                print(root.path)
                if browser != .firefox { Output.error("Extension id: \(BrowserExtension.chromiumID)") }
            }
        }

        struct Pair: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Wait for the extension to ask for pairing and print the code to type into it.",
                discussion: """
                    Click Pair in Keyhaven's extension (before or after running this); the code is valid \
                    for 5 minutes and 3 tries. Pairing is CPace: nothing between the browser and the \
                    agent can test a code offline. --json prints {"code": "123456", "clientName": \
                    "Chromium"|"Firefox"} (the browser the native host reported).
                    """
            )
            @Option(name: .long, help: ArgumentHelp("The agent's socket.", valueName: "path")) var socket: String?
            @Option(
                name: .long,
                help: ArgumentHelp("How long to wait for a request, in seconds.", valueName: "seconds")
            )
            var timeout: Int = 120
            @Flag(name: .long, help: "Print JSON.") var json = false

            func run() async throws {
                let connection = try AgentClient.require(socket)
                if !json { Output.error("Waiting for Keyhaven's browser extension to ask for pairing (click Pair)…") }
                let answer = try AgentClient.request(connection, .pairCode(timeoutSeconds: Double(timeout)))
                let code = answer.code
                if json {
                    print(try Output.jsonLine(answer))
                } else {
                    print("Type this code into the extension: \(code.prefix(3)) \(code.dropFirst(3))")
                }
            }
        }

        struct Pairings: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List the paired browsers, or revoke one (--revoke ID).",
                discussion: "A revoked browser's next request gets `notPaired`; it must pair again."
            )
            @Option(name: .long, help: ArgumentHelp("The agent's socket.", valueName: "path")) var socket: String?
            @Option(name: .long, help: ArgumentHelp("Revoke this pairing.", valueName: "id")) var revoke: String?
            @Flag(name: .long, help: "Print JSON.") var json = false

            func run() async throws {
                let connection = try AgentClient.require(socket)
                if let revoke {
                    _ = try AgentClient.request(connection, .revokePairing(pairingId: revoke))
                    print("Revoked \(revoke).")
                    return
                }
                let pairings = try AgentClient.request(connection, .pairings)
                if json {
                    print(try Output.jsonLine(pairings))
                    return
                }
                if pairings.isEmpty { print("No browser is paired (run `keyhaven browser pair`).") }
                for pairing in pairings {
                    print("\(pairing.id)  \(pairing.name)  \(pairing.browser)  paired \(pairing.created)")
                }
            }
        }
    }

    struct BrowserHost: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "browser-host",
            abstract: "The native-messaging host the browser starts for Keyhaven's extension (not for people).",
            discussion: """
                Relays the browser's frames (4-byte length + JSON, at most 1 MiB) between standard \
                input/output and the agent's socket, after checking that the caller (Chromium: \
                chrome-extension://ID/, Firefox: the extension id) is Keyhaven's extension.
                """,
            shouldDisplay: false
        )
        @Argument(parsing: .allUnrecognized, help: "What the browser passes: the caller's origin, or manifest and id.")
        var callerArguments: [String] = []

        func run() async throws {
            let environment = CommandIO.current.environment
            // Chromium: [origin]; Firefox: [manifest path, extension id].
            let caller = callerArguments.count >= 2 ? callerArguments[1] : (callerArguments.first ?? "")
            let browser = callerArguments.count >= 2 ? "firefox" : "chromium"
            let browserSide = FrameConnection(input: 0, output: 1)
            @Sendable func refuse(_ code: String, _ reason: String) -> ExitCode {
                try? browserSide.send(
                    ["v": 1, "id": .null, "error": ["code": .string(code), "localizedFailureReason": .string(reason)]]
                        as JSONValue
                )
                return ExitCode(1)
            }
            guard BrowserExtension.allowedCallers(environment: environment).contains(caller) else {
                throw refuse("originNotAllowed", "This native host serves Keyhaven's own extension only.")
            }
            let reached: FrameConnection?
            do {
                reached = try AgentClient.connect()
            } catch let failure as CommandFailure {
                // Another user's socket or folder: nothing was sent, and the extension says why.
                throw refuse("failed", failure.message.prefix(1).uppercased() + failure.message.dropFirst() + ".")
            }
            guard let agent = reached else {
                throw refuse("locked", "Keyhaven's agent is not running: run `keyhaven agent`.")
            }
            try agent.send(BrowserHostHello(caller: caller, browser: browser).encoded())
            let done = DispatchSemaphore(value: 0)
            Thread {
                do {
                    while let frame = try browserSide.receive() {
                        guard (try? agent.send(frame)) != nil else { break }
                    }
                    // The browser closed the port: the agent is told, and what it still answers
                    // is relayed until it closes its side.
                    agent.shutdownWrite()
                    return
                } catch let error as FrameError {
                    // Over 1 MiB, empty or cut off: say so once, then end the connection.
                    _ = refuse("badRequest", "The browser sent a frame the host refuses: \(error).")
                } catch {}
                agent.shutdownBoth()
                done.signal()
            }.start()
            Thread {
                while let frame = try? agent.receive() {
                    guard (try? browserSide.send(frame)) != nil else { break }
                }
                done.signal()
            }.start()
            await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                Thread {
                    done.wait()
                    finished.resume()
                }.start()
            }
        }
    }
}

/// A word for sh in single quotes.
func shellQuoted(_ word: String) -> String {
    "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
