import Foundation

/// The test process's environment for `keyhaven` processes of a test's own: the vault
/// (`vault.sqlite`) and the config in `directory`, the N=2^10 test vaults allowed, and nothing of
/// the person's own Keyhaven (password, agent socket) reaching them.
enum IsolatedEnvironment {
    /// - Parameters:
    ///   - home: `$HOME` (`directory` when nil).
    ///   - runtime: `$XDG_RUNTIME_DIR`, or none at all when nil (the agent then picks its own folder).
    ///   - removing: further variables the test must not inherit.
    static func make(
        in directory: URL,
        home: URL? = nil,
        runtime: URL?,
        removing: [String] = []
    ) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in ["KEYHAVEN_PASSWORD", "KEYHAVEN_AGENT_SOCKET"] + removing {
            environment[name] = nil
        }
        environment["KEYHAVEN_VAULT"] = directory.appendingPathComponent("vault.sqlite").path
        environment["KEYHAVEN_INSECURE_KDF"] = "1"
        environment["XDG_RUNTIME_DIR"] = runtime?.path
        environment["HOME"] = (home ?? directory).path
        environment["XDG_CONFIG_HOME"] = directory.appendingPathComponent("config").path
        return environment
    }
}
