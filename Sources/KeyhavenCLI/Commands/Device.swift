import ArgumentParser
import Foundation
import KeyhavenApp

extension Keyhaven {
    struct Device: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "device",
            abstract: "The devices of this vault's sync account: approve a new one, list them, revoke one.",
            discussion: """
                Run on a device already in sync (`keyhaven sync enable` or `join`). A new device asks \
                to join with `keyhaven sync join` and shows a code; approving that code here lets it in \
                and hands it the account's sync key, sealed so that the server cannot open it. See \
                docs/sync.md.

                Examples:
                  keyhaven device approve
                  keyhaven device list --json
                  keyhaven device revoke 0123456789abcdef0123456789abcdef --yes
                """,
            subcommands: [DeviceApprove.self, DeviceList.self, DeviceRevoke.self]
        )

        @ParentCommand var root: Keyhaven
    }
}

/// A `keyhaven device` subcommand (the vault's session answers it, as `keyhaven sync`'s).
protocol DeviceVaultCommand: VaultCommand {
    var device: Keyhaven.Device { get }
}

extension DeviceVaultCommand {
    var root: Keyhaven { device.root }
}

struct DeviceApprove: DeviceVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve",
        abstract: "Let a new device into this vault's sync account with the code it shows.",
        discussion: """
            Asks for the code `keyhaven sync join` shows on the new device (16 letters and digits; \
            case, dashes and spaces do not matter, O reads as 0, I and L as 1), on the terminal, or as \
            the first line of standard input with --code-stdin (before the master password's line with \
            --password-stdin). This device fetches the request from the server, checks with the code \
            that it is the new device's own (a server that swapped its key is refused: "the join \
            request does not match this code"), signs the approval of its key and sends it the \
            account's sync key sealed to a key only the new device holds. The code is good for 10 \
            minutes and one approval; it never goes to the server. Approve only a code you read on \
            your own device, just now: whoever else learns the code in time can use it to pull the \
            new device into an account of their own. The code may also be given as an argument, for \
            scripts, but a command line is visible to other users of this machine (ps) and kept in \
            the shell's history: prefer the prompt or --code-stdin. --json prints {deviceID, \
            deviceName, account}.

            Examples:
              keyhaven device approve
              echo K7QM-2XPA-9FRT-4HDW | keyhaven device approve --code-stdin --json
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var device: Keyhaven.Device
    @Argument(
        help: ArgumentHelp(
            "The code the new device shows (visible to other users in `ps`: prefer the prompt or --code-stdin).",
            valueName: "code"
        )
    )
    var code: String?
    @Flag(name: .customLong("code-stdin"), help: "Read the code from the first line of standard input.")
    var codeStdin = false
    @Flag(name: .long, help: "Print JSON.") var json = false

    func validate() throws {
        if code != nil && codeStdin {
            throw ValidationError("give the code either as an argument or with --code-stdin")
        }
    }

    /// The code: the argument, the first line of standard input (--code-stdin), or a prompt.
    func readCode() throws -> String {
        if let code { return code }
        if codeStdin {
            guard let line = Terminal.standardInputLine(), !line.isEmpty else {
                throw Output.failure("--code-stdin: standard input has no code line")
            }
            return line
        }
        guard let typed = Terminal.ask("Code shown on the new device: ") else {
            throw Output.failure("no terminal to ask for the code: use --code-stdin")
        }
        return typed
    }

    func run() async throws {
        let code = try readCode()
        let approval = try await openStore().approveDevice(code: code)
        if json {
            print(try Output.json(approval))
            return
        }
        print(
            "Approved \(approval.deviceName) (\(approval.deviceID)) for account \(approval.account); it finishes "
                + "joining and syncs by itself."
        )
    }
}

struct DeviceList: DeviceVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the devices of this vault's sync account (revoked ones included).",
        discussion: """
            Asks the server. Each device with its id, name, when it was enrolled, which device \
            approved it, whether it is revoked, and which one is this device. --json prints an array of \
            {id, name, created, approvedBy, revoked, current} (approvedBy absent for the account's first \
            device, revoked absent while it may sync).

            Examples:
              keyhaven device list
              keyhaven device list --json | jq '.[] | select(.revoked == null) | .name'
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var device: Keyhaven.Device
    @Flag(name: .long, help: "Print JSON.") var json = false

    func run() async throws {
        let devices = try await openStore().syncDevices()
        if json {
            print(try Output.json(devices))
            return
        }
        let formatter = ISO8601DateFormatter()
        for entry in devices {
            var line = "\(entry.id)  \(entry.name)  enrolled \(formatter.string(from: entry.created))"
            if let approver = entry.approvedBy { line += ", approved by \(approver)" }
            if let revoked = entry.revoked { line += ", revoked \(formatter.string(from: revoked))" }
            if entry.current { line += "  (this device)" }
            print(line)
        }
    }
}

struct DeviceRevoke: DeviceVaultCommand {
    static let configuration = CommandConfiguration(
        commandName: "revoke",
        abstract: "Revoke a device of this vault's sync account: it can no longer reach the server.",
        discussion: """
            ID is the device's id (`keyhaven device list`). From now on the server refuses the device's \
            sign-ins and tokens, and its key can never be enrolled again. Not this device: to stop \
            syncing here run `keyhaven sync disable`. Says what it does and asks first (reads y from \
            standard input); --yes does not ask (required when nobody can answer).

            Not in this version: rotating the account's sync key. A revoked device cannot reach the \
            server any more, but it still holds the sync key and every credential it had already \
            synced; change the passwords that matter if the device was lost or stolen.

            --json prints the revoked device: {id, name, created, approvedBy, revoked, current}.

            Examples:
              keyhaven device revoke 0123456789abcdef0123456789abcdef
              keyhaven device revoke 0123456789abcdef0123456789abcdef --yes --json
            """
    )
    @OptionGroup var options: VaultOptions
    @ParentCommand var device: Keyhaven.Device
    @Argument(help: ArgumentHelp("The device's id (keyhaven device list).", valueName: "id")) var id: String
    @Flag(name: .long, help: "Do not ask; revoke.") var yes = false
    @Flag(name: .long, help: "Print JSON.") var json = false

    func run() async throws {
        let store = try await openStore()
        if !yes {
            Output.error(
                "keyhaven: device \(id) will no longer reach the sync server (it keeps what it already synced, "
                    + "and the sync key)."
            )
            Output.error("Revoke it? [y/N]")
            let answer = CommandIO.current.readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
            guard answer == "y" || answer == "yes" else {
                throw Output.failure("nothing revoked; to revoke without the question, pass --yes")
            }
        }
        let revoked = try await store.revokeDevice(id)
        if json {
            print(try Output.json(revoked))
            return
        }
        print("Revoked \(revoked.name) (\(revoked.id)): its sign-ins are refused from now on.")
    }
}
