import ArgumentParser
import BreachCheck
import BreachCheckHTTP
import Foundation

extension Keyhaven {
    struct Breach: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check passwords against Pwned Passwords, offline or privately online.",
            discussion: """
                Three ways: the public k-anonymity range API (only the first 5 hex digits of a \
                password's SHA-1 leave the machine), a local index of the whole corpus built from \
                HIBP's download, or your own range server over such an index. `breach psi` builds and \
                serves the private check (a 15-bit bucket and a blinded element per password); `breach top` \
                builds the device's list of the most common leaked passwords, checked before the private \
                check asks its server.
                """,
            subcommands: [Index.self, Check.self, Serve.self, PSI.self, Top.self]
        )
    }
}

extension Keyhaven.Breach {
    struct Index: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Build or inspect an offline breach index.",
            subcommands: [Build.self, Info.self]
        )
    }

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print how often each password (one per line on standard input) was breached.",
            discussion: """
                Prints one count per input line, in order: 0 when absent. With --sha1, input lines are \
                40-digit SHA-1 hashes instead of passwords. A compact index gives approximate counts \
                (powers of two).
                """
        )
        @Option(name: .long, help: ArgumentHelp("A breach index built by `breach index build`.", valueName: "index"))
        var index: String?
        @Option(
            name: .long,
            help: ArgumentHelp("A range API base URL, e.g. https://api.pwnedpasswords.com.", valueName: "url")
        )
        var api: String?
        @Flag(name: .long, help: "Input lines are SHA-1 hashes (40 hex digits), not passwords.") var sha1 = false

        func validate() throws {
            if (index == nil) == (api == nil) {
                throw ValidationError("give exactly one of --index INDEX or --api BASE_URL")
            }
        }

        func run() async throws {
            var digests: [SHA1Digest] = []
            var invalid: [Int] = []
            for (number, line) in Output.standardInputLines().enumerated() {
                if sha1 {
                    guard let digest = SHA1Digest(hex: line.trimmingCharacters(in: .whitespaces)) else {
                        invalid.append(number + 1)
                        continue
                    }
                    digests.append(digest)
                } else {
                    digests.append(SHA1Digest(password: line))
                }
            }
            if !invalid.isEmpty {
                let list = invalid.prefix(10).map(String.init).joined(separator: ", ")
                throw Output.failure("not a 40-digit SHA-1 on line \(list)\(invalid.count > 10 ? ", …" : "")")
            }
            let counts: [Int]
            if let index {
                do {
                    let opened = try BreachIndex(url: URL(fileURLWithPath: index))
                    counts = try digests.map { digest throws(BreachError) in try opened.count(of: digest) }
                } catch {
                    throw Output.failure(error.message)
                }
            } else {
                let base = api!
                let client = RangeClient(transport: HTTPRangeTransport(base: base), baseDescription: base)
                do {
                    counts = try await client.counts(for: digests)
                } catch {
                    throw Output.failure(error.message)
                }
            }
            var output = ""
            output.reserveCapacity(counts.count * 4)
            for count in counts {
                output += String(count)
                output += "\n"
            }
            CommandIO.current.writeOutput(Data(output.utf8))
        }
    }

    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve a full breach index as a Pwned Passwords range API.",
            discussion: """
                Answers GET /range/{prefix} exactly as api.pwnedpasswords.com does (Add-Padding \
                supported), so KeePassXC, Bitwarden and Keyhaven clients work against it unchanged. \
                Stops gracefully on Ctrl-C or SIGTERM.
                """
        )
        @Option(name: .long, help: ArgumentHelp("A full breach index.", valueName: "index")) var index: String
        @Option(name: .long, help: "Address to listen on.") var host = "127.0.0.1"
        @Option(name: .long, help: "Port to listen on.") var port = 8080

        func run() async throws {
            let server: RangeServer
            do {
                server = try RangeServer(index: BreachIndex(url: URL(fileURLWithPath: index)))
            } catch {
                throw Output.failure(error.message)
            }
            Output.error(
                "keyhaven: serving \(server.index.count) hashes on http://\(host):\(port)/range/{prefix} (Ctrl-C stops)"
            )
            try await server.run(host: host, port: port)
        }
    }
}

extension Keyhaven.Breach.Index {
    struct Build: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Build an index from HIBP's downloadable file (SHA1:COUNT lines).",
            discussion: """
                Streams the file (sorted or not, LF or CRLF) in bounded memory: sorted runs of at most \
                --memory MiB spill to temporary files beside the output and are merged. Malformed lines \
                are reported and skipped. By default the index keeps whole hashes and exact counts \
                (~22 bytes per hash; needed to serve ranges). --compact keeps the first 64 bits and a \
                power-of-two count (~5–6 bytes per hash), for lookups only.
                """
        )
        @Argument(help: "The Pwned Passwords text file.") var source: String
        @Option(name: .long, help: "Where to write the index.") var output: String
        @Flag(name: .long, help: "64-bit prefixes and approximate counts (≤ 6 bytes per hash); cannot serve ranges.")
        var compact = false
        @Option(name: .long, help: "Memory for sorting, in MiB.") var memory = 1024
        @Flag(name: .long, help: "Print the report as JSON.") var json = false

        func run() async throws {
            let bar = ProgressBar()
            let builder = BreachIndexBuilder(kind: compact ? .compact : .full, memoryLimit: memory << 20)
            let report: BreachIndexBuilder.Report
            do {
                report = try builder.build(
                    input: URL(fileURLWithPath: source),
                    output: URL(fileURLWithPath: output)
                ) { phase, done, total in
                    bar.update(phase, done: done, total: total, unit: phase == "reading" ? "B" : "")
                }
            } catch {
                bar.finish()
                throw Output.failure(error.message)
            }
            bar.finish()
            for sample in report.badLineSamples {
                Output.error("keyhaven: skipped line \(sample.line): \(sample.reason)")
            }
            if report.badLines > report.badLineSamples.count {
                Output.error("keyhaven: … and \(report.badLines - report.badLineSamples.count) more malformed lines")
            }
            let perHash = Double(report.bytes) / Double(max(report.hashes, 1))
            if json {
                struct Summary: Encodable {
                    var hashes: Int
                    var lines: Int
                    var badLines: Int
                    var bytes: Int
                    var bytesPerHash: Double
                    var seconds: Double
                    var kind: String
                }
                print(
                    try Output.jsonLine(
                        Summary(
                            hashes: report.hashes,
                            lines: report.lines,
                            badLines: report.badLines,
                            bytes: report.bytes,
                            bytesPerHash: perHash,
                            seconds: report.seconds,
                            kind: compact ? "compact" : "full"
                        )
                    )
                )
            } else {
                print(
                    "Indexed \(report.hashes) hashes from \(report.lines) lines (\(report.badLines) malformed) in "
                        + String(format: "%.1f s: %@, %.2f bytes per hash", report.seconds, output, perHash)
                )
            }
        }
    }

    struct Info: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Describe a breach index.")
        @Argument(help: "The index.") var index: String

        func run() throws {
            do {
                let opened = try BreachIndex(url: URL(fileURLWithPath: index))
                print(
                    "\(opened.kind.rawValue) index: \(opened.count) hashes, "
                        + String(format: "%.2f bytes per hash, ", opened.bytesPerHash)
                        + (opened.exactCounts ? "exact counts, can serve ranges" : "approximate counts, lookups only")
                )
            } catch {
                throw Output.failure(error.message)
            }
        }
    }
}
