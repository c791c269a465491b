import ArgumentParser
import KeyhavenCLI

/// The entry point: the command tree lives in `KeyhavenCLI` (so tests can parse it in-process); the
/// executable only marks its root as `@main`.
@main
extension Keyhaven {}
