import ArgumentParser
import KeyhavenCLI
import NIOCore
import NIOPosix

// The entry point: the command tree lives in `KeyhavenCLI` (so tests can parse it in-process).
//
// `keyhaven idp serve` runs Swift concurrency on NIO's event-loop threads (one per core) instead of
// a separate cooperative pool: a token request then stays on the thread that read it, with no hop
// between pools — measurably more requests per core when every request signs an RS256 token. This
// has to happen before any task runs, so it is decided here from the arguments.
if CommandLine.arguments.dropFirst().prefix(2).elementsEqual(["idp", "serve"]) {
    _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
}
await Keyhaven.runMain()
