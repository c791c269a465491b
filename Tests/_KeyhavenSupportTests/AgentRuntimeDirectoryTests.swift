import Foundation
import Testing
import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Security review #6: the agent's folder is found in one place and trusted only when it is the
/// person's own (owner, 0700, no link) and nothing above it lets another user swap it.
@Suite struct AgentRuntimeDirectoryTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("kh-runtime-\(UUID().uuidString)")
        try PrivateFile.createDirectory(at: url)
        return url
    }

    static func mode(_ path: String) -> mode_t {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & 0o7777 : 0
    }

    static func refusal(_ location: AgentRuntimeDirectory, create: Bool = false) -> AgentRuntimeDirectoryError? {
        do throws(AgentRuntimeDirectoryError) {
            try location.verify(create: create)
            return nil
        } catch {
            return error
        }
    }

    @Test func theSocketIsChosenThenRuntimeThenUnderHome() {
        let all = [
            "KEYHAVEN_AGENT_SOCKET": "/srv/a/agent.sock", "XDG_RUNTIME_DIR": "/run/user/1000",
            "XDG_STATE_HOME": "/home/ada/state", "HOME": "/home/ada",
        ]
        let explicit = AgentRuntimeDirectory.locate(socket: "/srv/b/k.sock", environment: all)
        #expect(explicit.socketPath == "/srv/b/k.sock" && explicit.kind == .chosen && explicit.path == "/srv/b")
        let variable = AgentRuntimeDirectory.locate(socket: nil, environment: all)
        #expect(variable.socketPath == "/srv/a/agent.sock" && variable.kind == .chosen)
        var environment = all
        environment["KEYHAVEN_AGENT_SOCKET"] = ""
        let runtime = AgentRuntimeDirectory.locate(socket: "", environment: environment)
        #expect(runtime.socketPath == "/run/user/1000/keyhaven/agent.sock" && runtime.kind == .runtime)
        #expect(runtime.file(named: "agent.log").path == "/run/user/1000/keyhaven/agent.log")
        environment["XDG_RUNTIME_DIR"] = nil
        let state = AgentRuntimeDirectory.locate(socket: nil, environment: environment)
        #expect(state.socketPath == "/home/ada/state/keyhaven/run/agent.sock" && state.kind == .home)
        environment["XDG_STATE_HOME"] = nil
        let home = AgentRuntimeDirectory.locate(socket: nil, environment: environment)
        #expect(home.socketPath == "/home/ada/.local/state/keyhaven/run/agent.sock" && home.kind == .home)
        // Never the shared temporary folder.
        #expect(!home.socketPath.hasPrefix(NSTemporaryDirectory()) && !home.socketPath.hasPrefix("/tmp/"))
    }

    @Test func missingFoldersAreMadePrivateOnlyWhenAsked() throws {
        let home = try Self.folder()
        let location = AgentRuntimeDirectory.locate(socket: nil, environment: ["HOME": home.path])
        #expect(try location.verify(create: false) == false)
        #expect(!FileManager.default.fileExists(atPath: location.path))
        let made = try AgentRuntimeDirectory.verified(socket: nil, environment: ["HOME": home.path])
        #expect(made == location)
        for path in [".local", ".local/state", ".local/state/keyhaven", ".local/state/keyhaven/run"] {
            #expect(Self.mode(home.appendingPathComponent(path).path) == 0o700, "\(path)")
        }
        #expect(try location.verify(create: false))
    }

    /// A folder of ours that was open to others, a link where the folder should be, and a folder
    /// of another user are refused, with what to do, and never repaired or followed.
    @Test func aFolderThatIsNotOnlyOursIsRefused() throws {
        let base = try Self.folder()
        let location = AgentRuntimeDirectory.locate(socket: nil, environment: ["XDG_RUNTIME_DIR": base.path])
        // 0777 (or 0755): refused, left as it is.
        #expect(mkdir(location.path, 0o700) == 0 && chmod(location.path, 0o777) == 0)
        let open = Self.refusal(location, create: true)
        #expect(open?.code == .openToOthers)
        #expect(open?.message.contains("mode 777") == true && open?.message.contains("rm -r \(location.path)") == true)
        #expect(Self.mode(location.path) == 0o777)
        // A link to a private folder of ours: still refused (lstat).
        rmdir(location.path)
        let elsewhere = base.appendingPathComponent("elsewhere").path
        #expect(mkdir(elsewhere, 0o700) == 0 && symlink(elsewhere, location.path) == 0)
        let link = Self.refusal(location, create: true)
        #expect(link?.code == .symbolicLink)
        #expect(link?.message.contains("symbolic link") == true)
        unlink(location.path)
        #expect(try location.verify(create: true))
        #expect(Self.mode(location.path) == 0o700)
    }

    @Test(.enabled(if: getuid() == 0, "chown to another user needs root (CI runs as root)"))
    func anotherUsersFolderIsRefused() throws {
        let base = try Self.folder()
        let location = AgentRuntimeDirectory.locate(socket: nil, environment: ["XDG_RUNTIME_DIR": base.path])
        #expect(mkdir(location.path, 0o700) == 0 && chown(location.path, 65534, 65534) == 0)
        let refused = Self.refusal(location)
        #expect(refused?.code == .foreignOwner)
        #expect(refused?.message.contains("uid 65534") == true)
        // XDG_RUNTIME_DIR itself must be ours (after `su` it may be another user's).
        rmdir(location.path)
        #expect(chown(base.path, 65534, 65534) == 0)
        let theirs = Self.refusal(location, create: true)
        #expect(theirs?.code == .foreignOwner)
        #expect(theirs?.message.contains("XDG_RUNTIME_DIR") == true)
    }

    /// A folder above the agent's that others can write lets them rename the agent's folder away
    /// and put theirs in its place; a chosen socket's folder likewise. Sticky (`/tmp`) is fine.
    @Test func aFolderAboveThatOthersCanWriteIsRefused() throws {
        let base = try Self.folder()
        let open = base.appendingPathComponent("open").path
        #expect(mkdir(open, 0o700) == 0 && chmod(open, 0o777) == 0)
        let runtime = AgentRuntimeDirectory.locate(
            socket: nil,
            environment: ["XDG_RUNTIME_DIR": open + "/inner"]
        )
        #expect(Self.refusal(runtime, create: true)?.code == .openToOthers)
        let chosen = AgentRuntimeDirectory(chosenSocket: open + "/agent.sock")
        let refused = Self.refusal(chosen, create: true)
        #expect(refused?.code == .openToOthers)
        #expect(refused?.message.contains("chmod go-w \(open)") == true)
        // The same through a link the person made: the folder it leads to is checked.
        let link = base.appendingPathComponent("link").path
        #expect(symlink(open, link) == 0)
        #expect(Self.refusal(AgentRuntimeDirectory(chosenSocket: link + "/agent.sock"))?.code == .openToOthers)
        // Sticky, as /tmp: others cannot rename what is ours in it.
        #expect(chmod(open, 0o1777) == 0)
        #expect(try chosen.verify(create: false))
        #expect(try runtime.verify(create: true))
    }

    @Test func aSocketPathTooLongForSunPathIsRefusedWithAdvice() {
        let long = "/tmp/" + String(repeating: "d", count: 120) + "/agent.sock"
        let refused = Self.refusal(AgentRuntimeDirectory(chosenSocket: long), create: true)
        #expect(refused?.code == .tooLong)
        #expect(refused?.message.contains("KEYHAVEN_AGENT_SOCKET") == true)
        #expect(!FileManager.default.fileExists(atPath: (long as NSString).deletingLastPathComponent))
    }
}
