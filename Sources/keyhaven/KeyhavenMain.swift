import ArgumentParser
import KeyhavenCLI

/// The entry point. The command tree lives in `KeyhavenCLI` (so tests can parse and run it in-process);
/// `@main` must sit on an `AsyncParsableCommand` in the executable for async subcommands to run.
@main
struct KeyhavenMain: AsyncParsableCommand {
    static let configuration = Keyhaven.configuration
}
