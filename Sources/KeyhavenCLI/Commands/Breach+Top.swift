import ArgumentParser
import BreachCheck
import BreachPSI
import Foundation

extension Keyhaven.Breach {
    /// Synchronous: one long pass over a large file, on the main thread rather than Swift's
    /// cooperative pool.
    struct Top: ParsableCommand {
        /// Where `keyhaven audit --breach-psi` looks for the list: beside the vault.
        static let defaultFileName = "pwned-top.khbi"

        static let configuration = CommandConfiguration(
            abstract: "Build this device's list of the most common leaked passwords (for audit --breach-psi).",
            discussion: """
                Run it on the device, not on the server: it reads HIBP's Pwned Passwords download \
                (SHA1:COUNT lines, the file `breach index build` and `breach psi build` read) and keeps \
                the --top hashes seen most often, as a compact breach index (64-bit prefixes, about 6 \
                bytes a hash: ~6 MB for the default million). `keyhaven audit --breach-psi URL` looks \
                every password up in it first, with no network: a password found there is reported \
                breached even when the server is down, and is never sent (a stand-in takes its place \
                in its batch, the same every run, from a key kept 0600 beside the list: \
                LIST.stand-in-key, made here when absent; so the server sees the same batches). Only \
                the rest go to the server.

                Default output: pwned-top.khbi beside the vault (--vault, the global --vault, \
                $KEYHAVEN_VAULT, else $XDG_DATA_HOME/keyhaven/), where the audit looks for it. Memory: 16 bytes per kept hash (one pass with a heap), whatever the \
                file's size. Malformed lines are reported and skipped; more than 10 that are also more \
                than 1 % of the lines mean the wrong file: nothing is written unless --allow-malformed. \
                The list is written under a temporary name and renamed into place (atomic), so an \
                interrupted run leaves the old list; an --output that exists and is not a regular file \
                (a directory) is refused, never deleted. --json prints hashes, hashesRead, lines, \
                badLines, smallestCount, bytes, output and seconds.

                Examples:
                  keyhaven breach top pwned-passwords-sha1-ordered-by-count.txt
                  keyhaven breach top pwned.txt --output top.khbi --top 250000 --json
                  keyhaven audit --breach-psi https://psi.example.org --breach-top top.khbi
                """
        )
        @Argument(help: ArgumentHelp("The Pwned Passwords text file (SHA1:COUNT lines).", valueName: "hibp-file"))
        var source: String
        @Option(
            name: .long,
            help: ArgumentHelp(
                "Where to write the list (default: pwned-top.khbi beside the vault).",
                valueName: "file"
            )
        )
        var output: String?
        @Option(name: .long, help: ArgumentHelp("How many of the most common hashes to keep.", valueName: "n"))
        var top = BreachTopListBuilder.defaultTop
        @Option(name: .long, help: "The vault whose directory holds the default output.") var vault: String?
        @Flag(
            name: .customLong("allow-malformed"),
            help: "Write the list even when more than 1 % of the lines (and more than 10) are not SHA1:COUNT lines."
        )
        var allowMalformed = false
        @Flag(name: .long, help: "Print a JSON summary.") var json = false
        /// The global `keyhaven --vault PATH`, which the audit honours too.
        @ParentCommand var root: Keyhaven

        /// Where the list goes by default and where the audit looks for it: beside the vault named
        /// by `vault` (the command's `--vault`, else the global one), `$KEYHAVEN_VAULT` or the XDG
        /// default. The one resolution both commands use, so that they never disagree.
        static func defaultOutput(vault: String?) -> URL {
            VaultOptions.url(path: vault).deletingLastPathComponent().appendingPathComponent(defaultFileName)
        }

        func validate() throws {
            guard top >= 1, top <= BreachTopListBuilder.maximumTop else {
                throw ValidationError(
                    "--top is a number of hashes from 1 to \(BreachTopListBuilder.maximumTop) (got \(top))"
                )
            }
        }

        /// What `--json` prints.
        struct Summary: Encodable {
            var hashes, hashesRead, lines, badLines, smallestCount, bytes: Int
            var output: String
            var seconds: Double
        }

        func run() throws {
            let started = Date()
            let destination = output.map { URL(fileURLWithPath: $0) } ?? Self.defaultOutput(vault: vault ?? root.vault)
            let bar = ProgressBar()
            let built = Result { () throws(BreachError) in try build(to: destination, bar: bar) }
            bar.finish()
            let (selection, bytes) = try built.mapError { Output.failure($0.message) }.get()
            let summary = Summary(
                hashes: selection.hashes,
                hashesRead: selection.hashesRead,
                lines: selection.lines,
                badLines: selection.badLines,
                smallestCount: selection.smallestCount,
                bytes: bytes,
                output: destination.path,
                seconds: Date().timeIntervalSince(started)
            )
            guard !json else { return print(try Output.jsonLine(summary)) }
            print(
                "Kept the \(summary.hashes) most common of \(summary.hashesRead) hashes (each seen at least "
                    + "\(summary.smallestCount) times; \(summary.badLines) malformed lines) in "
                    + String(format: "%.1f s: %@, %d bytes", summary.seconds, summary.output, summary.bytes)
            )
        }

        /// Selects, checks the malformed lines, writes; returns the selection and the list's bytes.
        func build(to destination: URL, bar: ProgressBar) throws(BreachError) -> (BreachTopListBuilder.Selection, Int) {
            let builder = try BreachTopListBuilder(top: top)
            try BreachTopListBuilder.checkOutput(destination)
            let selection = try builder.select(input: URL(fileURLWithPath: source)) { phase, done, total in
                bar.update(phase, done: done, total: total, unit: "B")
            }
            for sample in selection.badLineSamples {
                Output.error("keyhaven: skipped line \(sample.line): \(sample.reason)")
            }
            if !allowMalformed
                && Keyhaven.Breach.PSI.Build.tooMalformed(bad: selection.badLines, good: selection.hashesRead)
            {
                throw BreachError(
                    .invalidInput,
                    "\(source) has \(selection.badLines) malformed lines and \(selection.hashesRead) SHA1:COUNT lines (more than 1 %); nothing was written. Is it the right file? Give --allow-malformed to build anyway"
                )
            }
            do {
                try FileManager.default.createDirectory(
                    at: destination.deletingLastPathComponent(),
                    withIntermediateDirectories: true
                )
            } catch {
                throw BreachError(
                    .io,
                    "cannot create \(destination.deletingLastPathComponent().path): \(error.localizedDescription)"
                )
            }
            let bytes = try builder.write(selection, to: destination) { phase, done, total in
                bar.update(phase, done: done, total: total)
            }
            // The audit's stand-ins for what the list finds come from a key beside it (kept if present).
            do throws(BreachPSIError) {
                _ = try BreachPSIStandInKey.loadOrCreate(besideList: destination)
            } catch {
                throw BreachError(.io, error.message)
            }
            return (selection, bytes)
        }
    }
}
