import ArgumentParser
import ShinyService

/// `shiny`: run the example service.
@main
struct ShinyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shiny",
        abstract: "An example service with Keyhaven's account-modification extension."
    )

    @Option(name: .long, help: "Address to listen on.") var host = "127.0.0.1"
    @Option(name: .long, help: "Port to listen on.") var port = 8081
    @Option(name: .long, help: "SQLite file for accounts (default: in memory).") var database: String?

    func run() async throws {
        let shiny = try Shiny(configuration: .init(host: host, port: port, databasePath: database))
        print("shiny on http://\(host):\(port)")
        try await shiny.run()
    }
}
