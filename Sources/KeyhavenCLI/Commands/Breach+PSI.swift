import ArgumentParser
import BreachCheck
import BreachCheckHTTP
import BreachPSI
import Foundation
import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#endif

extension Keyhaven.Breach {
    struct PSI: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "psi",
            abstract: "Build and serve the private breach check (docs/breach-psi.md).",
            discussion: """
                A breach-PSI server learns a 15-bit bucket and a blinded element per password, never \
                the password's hash. Clients: keyhaven audit --breach-psi URL.
                """,
            subcommands: [Build.self, Serve.self]
        )
    }
}

/// The files of a breach-PSI directory.
enum PSIDirectory {
    static let buckets = "buckets.khpsi"
    static let publicKey = "public-key.hex"
    static let secretKey = "server.key"
}

extension Keyhaven.Breach.PSI {
    /// Synchronous: the build is long CPU and file work, run on the main thread rather than on
    /// Swift's cooperative pool.
    struct Build: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Build a breach-PSI server's directory from a full breach index or a Pwned Passwords file.",
            discussion: """
                Writes DIR/buckets.khpsi (every leaked SHA-1's truncated OPRF output, grouped by bucket \
                with an offset table) and DIR/public-key.hex. The secret key goes to --key (default \
                DIR/server.key), created 0600; `breach psi serve` never publishes it. An existing key is \
                reused, so a rerun keeps the key clients know; --new-key replaces it.

                Memory: the buckets are built in slices, one pass over the input per slice; each pass \
                keeps 8 bytes per entry of its slice, so about --memory MiB whatever the corpus's size \
                (plus a 256 KiB table). A compact index cannot be used (it keeps 64 bits of each hash).

                Resuming: the key is kept from the first run; the bucket file is written under a \
                temporary name and renamed into place when complete, so an interrupted build leaves the \
                old file as it was, and a rerun builds the buckets again from the start (passes are not \
                resumed). Progress goes to standard error.
                """
        )
        @Argument(help: ArgumentHelp("A full breach index or a Pwned Passwords text file.", valueName: "index-or-file"))
        var source: String
        @Option(name: .long, help: ArgumentHelp("The server's directory (created if missing).", valueName: "dir"))
        var output: String
        @Option(name: .long, help: ArgumentHelp("The secret key file (default: DIR/server.key).", valueName: "path"))
        var key: String?
        @Flag(name: .customLong("new-key"), help: "Replace an existing key (clients must fetch the new one).")
        var newKey = false
        @Flag(
            name: .customLong("allow-malformed"),
            help: "Build even when more than 1 % of the lines (and more than 10) are not SHA-1 lines."
        )
        var allowMalformed = false
        @Option(name: .long, help: "Memory for entries, in MiB.") var memory = 1024
        @Flag(name: .long, help: "Print a JSON summary.") var json = false

        func validate() throws {
            guard memory >= 1, memory <= 1 << 30 else {
                throw ValidationError("--memory is in MiB: give a number from 1 to \(1 << 30) (got \(memory))")
            }
        }

        func run() throws {
            let started = Date()
            let directory = URL(fileURLWithPath: output)
            let keyURL =
                key.map { URL(fileURLWithPath: $0) } ?? directory.appendingPathComponent(PSIDirectory.secretKey)
            let input: BreachDigests.Source
            do {
                input = try BreachDigests.source(path: source)
            } catch {
                throw Output.failure(error.message)
            }
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw Output.failure("cannot create \(directory.path): \(error.localizedDescription)")
            }
            // A new key stays in memory until the buckets are built and in place: an interrupted or
            // failed build leaves the old key and the old buckets, which still match.
            let (serverKey, reused) = try loadOrCreateKey(at: keyURL)
            let bar = ProgressBar()
            var badLines = 0
            var goodLines = 0
            var samples: [String] = []
            let builder = BreachPSIBucketFileBuilder(key: serverKey, memoryLimit: memory << 20)
            let estimate = BreachDigests.estimatedCount(input)
            let passes = builder.passes(estimatedCount: estimate)
            Output.error(
                "keyhaven: building in \(passes) pass(es) over \(source) (about \(estimate) hashes, --memory \(memory) MiB)"
            )
            let report: BreachPSIBucketFileBuilder.Report
            do {
                report = try builder.build(
                    estimatedCount: estimate,
                    output: directory.appendingPathComponent(PSIDirectory.buckets),
                    read: { add in
                        badLines = 0
                        goodLines = 0
                        samples = []
                        try BreachDigests.forEach(
                            in: input,
                            bad: { line, reason in
                                badLines += 1
                                if samples.count < 10 { samples.append("line \(line): \(reason)") }
                            },
                            { digest in
                                goodLines += 1
                                add(digest)
                            }
                        )
                        if !allowMalformed && Self.tooMalformed(bad: badLines, good: goodLines) {
                            throw BreachPSIError(
                                .emptyInput,
                                "\(source) has \(badLines) malformed lines and \(goodLines) SHA-1 lines (more than 1 %); nothing was written. Is it the right file? Give --allow-malformed to build anyway"
                            )
                        }
                    },
                    progress: { pass, passes, digests in
                        bar.update("pass \(pass + 1)/\(passes)", done: digests, total: estimate)
                    }
                )
            } catch let error as BreachPSIError where error.code == .emptyInput && goodLines > 0 {
                bar.finish()
                for sample in samples.prefix(10) { Output.error("keyhaven: skipped \(sample)") }
                throw Output.failure(error.message)
            } catch let error as BreachPSIError where error.code == .emptyInput {
                bar.finish()
                throw Output.failure(
                    "\(source) holds no SHA-1 (\(badLines) malformed lines); give HIBP's `SHA1:COUNT` file or a full index"
                )
            } catch let error as BreachPSIError {
                bar.finish()
                throw Output.failure(error.message)
            } catch let error as BreachError {
                bar.finish()
                throw Output.failure(error.message)
            } catch {
                bar.finish()
                throw Output.failure("building \(directory.path) failed: \(error.localizedDescription)")
            }
            bar.finish()
            for sample in samples.prefix(10) { Output.error("keyhaven: skipped \(sample)") }
            if badLines > samples.count {
                Output.error("keyhaven: … and \(badLines - samples.count) more malformed lines")
            }
            if !reused { try saveKey(serverKey, at: keyURL) }
            let publicURL = directory.appendingPathComponent(PSIDirectory.publicKey)
            do {
                try Data((Hex.encode(serverKey.publicKey.representation) + "\n").utf8).write(
                    to: publicURL,
                    options: .atomic
                )
            } catch {
                throw Output.failure("cannot write \(publicURL.path): \(error.localizedDescription)")
            }
            let seconds = Date().timeIntervalSince(started)
            if json {
                struct Summary: Encodable {
                    var digests, entries, badLines, passes, largestBucket, bytes: Int
                    var keyID: String
                    var keyReused: Bool
                    var keyFile: String
                    var seconds: Double
                }
                let summary = Summary(
                    digests: report.digests,
                    entries: report.entries,
                    badLines: badLines,
                    passes: report.passes,
                    largestBucket: report.largestBucket,
                    bytes: report.bytes,
                    keyID: Hex.encode(serverKey.publicKey.id),
                    keyReused: reused,
                    keyFile: keyURL.path,
                    seconds: seconds
                )
                print(try Output.jsonLine(summary))
            } else {
                print(
                    "Built \(report.entries) entries from \(report.digests) hashes in \(report.passes) pass(es), "
                        + String(format: "%.1f s", seconds)
                        + ": \(directory.path) (key \(Hex.encode(serverKey.publicKey.id)), "
                        + (reused ? "reused from" : "new in") + " \(keyURL.path))"
                )
            }
        }

        /// Whether a corpus is mostly not SHA-1 lines: more than 10 bad lines and more than 1 %.
        static func tooMalformed(bad: Int, good: Int) -> Bool {
            bad > 10 && bad * 100 > bad + good
        }

        /// The key at `url` when present (unless --new-key: `reused` false); else a new one, kept in
        /// memory (``saveKey(_:at:)`` writes it once the buckets are in place).
        func loadOrCreateKey(at url: URL) throws -> (BreachPSIServerKey, reused: Bool) {
            let exists = FileManager.default.fileExists(atPath: url.path)
            if exists && !newKey {
                do {
                    return (try BreachPSIServerKey(contentsOf: url), true)
                } catch {
                    throw Output.failure("\(error.message); give --new-key to replace it")
                }
            }
            var generator = SystemRandomNumberGenerator()
            return (BreachPSIServerKey(using: &generator), false)
        }

        /// Writes a new key 0600 at `url`.
        func saveKey(_ key: BreachPSIServerKey, at url: URL) throws {
            let exists = FileManager.default.fileExists(atPath: url.path)
            // A new key is written beside the old one and renamed over it: never a moment without one.
            let temporary = url.deletingLastPathComponent().appendingPathComponent(
                ".\(url.lastPathComponent).new-\(UUID().uuidString)"
            )
            do throws(BreachPSIError) {
                try key.save(to: exists ? temporary : url)
                if exists, rename(temporary.path, url.path) != 0 {
                    try? FileManager.default.removeItem(at: temporary)
                    throw BreachPSIError(.io, "could not replace the key file \(url.path)")
                }
            } catch {
                throw Output.failure(
                    "\(error.message); the buckets were built under the new key \(Hex.encode(key.publicKey.id)), so rebuild"
                )
            }
        }
    }

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve a breach-PSI directory built by `breach psi build`.",
            discussion: """
                GET /psi/v1/key publishes the public key and the parameters; POST /psi/v1/query answers a \
                52-byte query with the evaluation, its proof and the bucket. Each client address may send \
                --burst queries at once, then --rate a second (429 with Retry-After beyond). The bucket \
                file is read per query, so memory does not grow with the corpus. Stops gracefully on \
                Ctrl-C or SIGTERM.
                """
        )
        @Argument(help: ArgumentHelp("The directory `breach psi build` wrote.", valueName: "dir")) var directory: String
        @Option(name: .long, help: ArgumentHelp("The secret key file (default: DIR/server.key).", valueName: "path"))
        var key: String?
        @Option(name: .long, help: "Address to listen on.") var host = "127.0.0.1"
        @Option(name: .long, help: "Port to listen on.") var port = 8081
        @Option(name: .long, help: "Queries per second per client address, after the burst.") var rate = 16.0
        @Option(name: .long, help: "Queries a client address may send at once.") var burst = 64

        func validate() throws {
            guard rate.isFinite, rate > 0 else {
                throw ValidationError("--rate must be a number of queries a second above 0 (got \(rate))")
            }
            guard burst >= 1 else { throw ValidationError("--burst must be at least 1 (got \(burst))") }
        }

        func run() async throws {
            let folder = URL(fileURLWithPath: directory)
            let keyURL = key.map { URL(fileURLWithPath: $0) } ?? folder.appendingPathComponent(PSIDirectory.secretKey)
            guard FileManager.default.fileExists(atPath: keyURL.path) else {
                throw Output.failure(
                    "no server key at \(keyURL.path); run `keyhaven breach psi build SOURCE --output \(folder.path)` first, or give the key with --key"
                )
            }
            let server: BreachPSIServer
            do {
                let serverKey = try BreachPSIServerKey(contentsOf: keyURL)
                let buckets = try BreachPSIBucketFile(url: folder.appendingPathComponent(PSIDirectory.buckets))
                server = try BreachPSIServer(key: serverKey, bucketFile: buckets)
            } catch {
                throw Output.failure(error.message)
            }
            let http = BreachPSIHTTPServer(server: server, limiter: BreachPSIRateLimiter(burst: burst, perSecond: rate))
            Output.error(
                "keyhaven: serving \(server.buckets.count) breach-PSI entries (key \(Hex.encode(server.key.publicKey.id))) on http://\(host):\(port)/psi/v1/ (Ctrl-C stops)"
            )
            try await http.run(host: host, port: port)
        }
    }
}
