import ArgumentParser
import Foundation
import KeyhavenApp
import KeyhavenSync
import _KeyhavenSupport

extension Keyhaven {
    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync",
            abstract: "End-to-end encrypted sync: turn it on, sync, see what waits; run the server.",
            discussion: """
                Devices sync through a server the person runs (`keyhaven sync serve`), which stores each \
                device's public key and the items as ciphertext it cannot read; devices authenticate with \
                their own keys, never with the master password. Every change lands in the vault first: \
                with the server out of reach nothing is lost, it waits for the next sync. See \
                docs/sync.md and the API in docs/openapi/sync.yaml.

                Examples:
                  keyhaven sync serve --port 8095
                  keyhaven sync enable --server https://sync.example.org --name laptop
                  keyhaven sync join --server https://sync.example.org --name phone
                  keyhaven sync now
                  keyhaven sync status --json
                  keyhaven list --conflicts
                  keyhaven sync resolve github.com --field password --keep other
                  keyhaven sync disable --yes
                """,
            subcommands: [
                SyncEnable.self, SyncJoin.self, SyncNow.self, SyncStatusCommand.self, SyncResolve.self,
                SyncDisable.self, SyncServe.self,
            ]
        )

        @ParentCommand var root: Keyhaven
    }
}

/// A `keyhaven sync` subcommand that works on the vault (through the agent's session when one
/// holds it unlocked, else a session of this process, as every vault command).
protocol SyncVaultCommand: VaultCommand {
    var sync: Keyhaven.Sync { get }
}

extension SyncVaultCommand {
    var root: Keyhaven { sync.root }
}

struct SyncEnable: SyncVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "enable",
        abstract: "Turn sync on: this device creates an account on the server and sends every credential.",
        discussion: """
            For the first device of a person. It makes this device's own key (Ed25519; the server keeps \
            only the public half) and a random sync key that seals every item before it leaves (not \
            derived from the master password), creates an account on the server, takes in every credential with its \
            password history (recently deleted ones as deletions) and syncs. The keys and the sync \
            state are kept sealed in the vault. The server URL is https://, or http:// to this \
            machine (127.0.0.1, localhost, ::1). Refused when sync is already on. Should the vault be \
            locked or the process stop between creating the account and saving it, the account stays on \
            the server unused (nothing of the vault is in it) and running enable again makes a new one. \
            Should the first sync fail (the server out of reach), sync stays on with everything \
            pending: run `keyhaven sync now` later, not enable again.

            For the person's further devices use `keyhaven sync join` there (and `keyhaven device \
            approve` here): running enable on another device makes a separate account that never syncs \
            with this one.

            Examples:
              keyhaven sync enable --server https://sync.example.org
              keyhaven sync enable --server http://127.0.0.1:8095 --name laptop --json
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var sync: Keyhaven.Sync
    @Option(name: .long, help: ArgumentHelp("The sync server's URL (`keyhaven sync serve`).", valueName: "url"))
    var server: String
    @OptionGroup var device: DeviceNameOption
    @Flag(
        name: .long,
        help:
            "Print the status as JSON: {enabled, server, account, deviceID, deviceName, pending, conflicts, lastSync}."
    )
    var json = false

    func run() async throws {
        let store = try await openStore()
        let status = try await store.enableSync(server: server, deviceName: device.name)
        if json {
            print(try Output.json(status))
        } else {
            print(
                "Sync is on: this device (\(status.deviceName ?? "")) created account \(status.account ?? "") on \(status.server ?? "")."
            )
            SyncStatusCommand.describe(status)
        }
    }
}

/// `--name`: this device's name for the person's other devices (`sync enable`, `sync join`).
struct DeviceNameOption: ParsableArguments {
    @Option(
        name: .customLong("name"),
        help: ArgumentHelp(
            "This device's name, shown to the person's other devices (default: the host name).",
            valueName: "name"
        )
    )
    var given: String?

    /// The name given, or this machine's.
    var name: String { given ?? SyncEnable.hostName() }
}

extension SyncEnable {
    /// This machine's name (`gethostname`: no DNS lookup, which could block), cut to what the
    /// server takes as a device name (100 characters, 200 UTF-8 bytes); "this device" without one.
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "this device" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return deviceName(name)
    }

    /// `name` cut to the server's limits, on character boundaries.
    static func deviceName(_ name: String) -> String {
        var cut = String(name.trimmingCharacters(in: .whitespacesAndNewlines).prefix(100))
        while cut.utf8.count > 200 { cut.removeLast() }
        return cut.isEmpty ? "this device" : cut
    }
}

struct SyncJoin: SyncVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Turn sync on as a further device of an account: a device already in approves it with a code.",
        discussion: """
            Shows a join code (16 letters and digits, like K7QM-2XPA-9FRT-4HDW) and waits. On a device \
            already in sync, run `keyhaven device approve` and type the code within the time given (10 \
            minutes by default, and never longer than the server keeps the request: 10 minutes unless \
            it is set otherwise). Keep the code to yourself: whoever approves it first brings this \
            device into their account. This device then receives the account's sync key, sealed to a key it made for the \
            purpose, enrols its own device key, and syncs: every credential of the account comes in, and \
            this vault's own credentials are kept and sent as new items (nothing here is lost). \
            The code never goes to the server: both devices prove with it that the request and the \
            approval are the ones the other made, so the server cannot put its own key in between. Both \
            devices must use the same server URL. Nothing is written to this vault before the approval \
            arrives: when the time runs out, on Ctrl-C (with or without the agent), or when the vault is \
            locked meanwhile, sync stays off (run join again for a new code). Once enrolled, a failure \
            to save here names the device id to revoke from another device; a failed first sync leaves \
            sync on with everything pending (`keyhaven sync now` retries). Once joined it says which \
            account, and which device approved it. Refused when sync is already on. --json prints the status after the first sync: \
            {enabled, server, account, deviceID, deviceName, pending, conflicts, lastSync}.

            Examples:
              keyhaven sync join --server https://sync.example.org
              keyhaven sync join --server http://127.0.0.1:8095 --name phone --timeout 300 --json
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var sync: Keyhaven.Sync
    @Option(name: .long, help: ArgumentHelp("The sync server's URL, as the other devices use it.", valueName: "url"))
    var server: String
    @OptionGroup var device: DeviceNameOption
    @Option(
        name: .long,
        help: ArgumentHelp(
            "How long to wait for the approval, in seconds (at most as long as the server keeps the request).",
            valueName: "seconds"
        )
    )
    var timeout = 600
    @Flag(name: .long, help: "Print the status as JSON once joined.") var json = false

    func validate() throws {
        guard (1...3600).contains(timeout) else { throw ValidationError("--timeout: from 1 to 3600 seconds") }
    }

    func run() async throws {
        let store = try await openStore()
        let code = KeyhavenSession.makeJoinCode()
        Output.error("keyhaven: join code: \(code)")
        Output.error(
            "Waiting for approval — on a device already in sync run `keyhaven device approve` and type this code"
                + " (within \(timeout >= 60 && timeout % 60 == 0 ? "\(timeout / 60) minutes" : "\(timeout) seconds"))"
        )
        let status = try await store.joinSync(
            server: server,
            deviceName: device.name,
            code: code,
            timeoutSeconds: timeout
        )
        if json {
            print(try Output.json(status))
        } else {
            print(
                "Sync is on: this device (\(status.deviceName ?? "")) joined account \(status.account ?? "") on \(status.server ?? "")."
            )
            // Which device let it in, as the server lists it: a surprise here means the code was
            // used by someone else (revoke, `sync disable`, and join again).
            if let devices = try? await store.syncDevices(), let this = devices.first(where: \.current),
                let approverID = this.approvedBy
            {
                let approver = devices.first { $0.id == approverID }
                print("Approved by device '\(approver?.name ?? "?")' (\(approverID)).")
            }
            SyncStatusCommand.describe(status)
        }
    }
}

struct SyncNow: SyncVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "now",
        abstract: "Sync now: send this vault's changes, bring in the other devices'.",
        discussion: """
            Edits made in the vault since the last sync go out; what other devices wrote comes in and is \
            merged per field (a concurrent change of the same field keeps the later value and the other \
            in the item's history, marked as a conflict); new credentials are created, changed ones \
            updated, deleted ones moved to recently deleted. A server that cannot be reached fails at \
            once (exit 1) and every change stays pending for the next sync. --json prints {pushed, \
            pulled, created, updated, deleted, restored, rejections, status}.

            Examples:
              keyhaven sync now
              keyhaven sync now --json
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var sync: Keyhaven.Sync
    @Flag(name: .long, help: "Print JSON.") var json = false

    func run() async throws {
        let store = try await openStore()
        let report = try await store.syncNow()
        if json {
            print(try Output.json(report))
            return
        }
        print(
            "Synced with \(report.status.server ?? "the server"): \(report.pushed) sent, \(report.pulled) received; "
                + "here \(report.created) new, \(report.updated) changed, \(report.deleted) deleted, "
                + "\(report.restored) restored."
        )
        for rejection in report.rejections { Output.error("keyhaven: warning: the server refused \(rejection)") }
        SyncStatusCommand.describe(report.status)
    }
}

struct SyncDisable: SyncVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable",
        abstract: "Turn sync off on this device: its sync keys and state leave the vault.",
        discussion: """
            Removes this device's sync state from the vault: its device key, the sync key and what \
            was waiting to be sent (changes not synced yet stay in this vault only). The credentials \
            stay as they are. The server keeps the account and this device's entry (its public key \
            only; the private key leaves with the state, so nobody can sign in as it), and the other \
            devices go on syncing; to remove this device from the server run `keyhaven device revoke ID` \
            on another device. Turning sync on again makes a new account (`keyhaven sync enable`) or \
            joins one (`keyhaven sync join`). Says \
            what it does and asks first (reads y from standard input); --yes does not ask. --json prints the status sync had: {enabled, \
            server, account, deviceID, deviceName, pending, conflicts, lastSync}.

            Examples:
              keyhaven sync disable
              keyhaven sync disable --yes --json
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var sync: Keyhaven.Sync
    @Flag(name: .long, help: "Do not ask; turn sync off.") var yes = false
    @Flag(name: .long, help: "Print JSON.") var json = false

    func run() async throws {
        let store = try await openStore()
        if !yes {
            let status = try await store.syncStatus()
            guard status.enabled else { throw Output.failure("sync is already off for this vault") }
            Output.error(
                "keyhaven: this removes this device's sync keys and state from the vault (\(status.pending) "
                    + "pending change\(status.pending == 1 ? "" : "s") will not be sent); the credentials stay. "
                    + "The server \(status.server ?? "") keeps account \(status.account ?? "") and this device."
            )
            Output.error("Turn sync off? [y/N]")
            let answer = CommandIO.current.readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
            guard answer == "y" || answer == "yes" else {
                throw Output.failure("sync stays on (nothing changed); to turn it off without the question, pass --yes")
            }
        }
        let status = try await store.disableSync()
        if json {
            print(try Output.json(status))
            return
        }
        print(
            "Sync is off on this device (it was with \(status.server ?? "the server"), account \(status.account ?? ""))."
        )
        print(
            "The server keeps the account and this device's public key (its private key is gone from this "
                + "vault); to remove it there, run `keyhaven device revoke \(status.deviceID ?? "ID")` on another device."
        )
    }
}

struct SyncStatusCommand: SyncVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether sync is on, with which server, and what is pending.",
        discussion: """
            Reads the vault only (nothing is sent). Pending counts the items with changes the server has \
            not confirmed, edits made since the last sync included; conflicts the items with a value \
            that lost to a concurrent write (kept in history). --json prints {enabled, server, account, \
            deviceID, deviceName, pending, conflicts, lastSync}.

            Examples:
              keyhaven sync status
              keyhaven sync status --json | jq .pending
              keyhaven --vault ~/work.sqlite sync status
            """
    )
    @Flag(name: .long, help: "Print JSON.") var json = false
    @ParentCommand var sync: Keyhaven.Sync
    @OptionGroup var options: VaultOptions

    func run() async throws {
        let status = try await openStore().syncStatus()
        if json {
            print(try Output.json(status))
        } else if !status.enabled {
            print("Sync is off. Turn it on with: keyhaven sync enable --server URL")
        } else {
            print("Sync is on: server \(status.server ?? ""), account \(status.account ?? "").")
            Self.describe(status)
        }
    }

    /// The lines every sync command ends with.
    static func describe(_ status: SyncStatus) {
        print("This device: \(status.deviceName ?? "") (\(status.deviceID ?? "")).")
        print("Pending: \(status.pending) item\(status.pending == 1 ? "" : "s"); conflicts: \(status.conflicts).")
        let formatter = ISO8601DateFormatter()
        print("Last sync: \(status.lastSync.map { formatter.string(from: $0) } ?? "never").")
    }
}
