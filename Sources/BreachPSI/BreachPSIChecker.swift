public import BreachCheck
public import _KeyhavenSupport

/// What a breach-PSI server publishes: its public key and the parameters of its buckets.
public struct BreachPSIPublication: Sendable, Equatable {
    /// The wire version, the number of buckets and the bytes of an entry.
    public var version, bucketCount, entryLength: Int
    public var publicKey: BreachPSIPublicKey

    public init(version: Int, bucketCount: Int, entryLength: Int, publicKey: BreachPSIPublicKey) {
        (self.version, self.bucketCount, self.entryLength) = (version, bucketCount, entryLength)
        self.publicKey = publicKey
    }

    /// This build's parameters with `publicKey`.
    public init(publicKey: BreachPSIPublicKey) {
        self.init(
            version: Int(BreachPSI.version),
            bucketCount: BreachPSI.bucketCount,
            entryLength: BreachPSI.entryLength,
            publicKey: publicKey
        )
    }
}

/// How the device reaches a breach-PSI server (HTTP in `BreachCheckHTTP`; a recording stand-in in
/// tests). Errors are ``BreachPSIError``s (`unreachable`, `serverError`, …).
public protocol BreachPSITransport: Sendable {
    /// Fetches what the server publishes.
    func publication() async throws(BreachPSIError) -> BreachPSIPublication
    /// Sends one 52-byte request; returns the response's bytes.
    func send(_ request: [UInt8]) async throws(BreachPSIError) -> [UInt8]
    /// How messages name the server (its base URL).
    var serverDescription: String { get }
}

/// Checks many passwords' digests against a breach-PSI server, in batches that look the same
/// whatever the person holds: every batch has ``batchSize`` requests of 52 bytes (the real digests,
/// then random ones), in random order, so 1 password and 16 cause the same requests. The server's
/// key is fetched first and pinned: an answer under any other key (the server changed its key
/// mid-way) or with a bad proof stops the check with an error, never a "not breached". A transport
/// failure stops it at once (nothing is retried).
public struct BreachPSIChecker: Sendable {
    public let transport: any BreachPSITransport
    /// Requests per batch (the real digests padded with random ones).
    public let batchSize: Int

    public init(transport: any BreachPSITransport, batchSize: Int = 16) {
        self.transport = transport
        self.batchSize = max(batchSize, 1)
    }

    /// How many requests `count` digests cost: whole batches.
    public func requests(for count: Int) -> Int {
        max(1, (count + batchSize - 1) / batchSize) * batchSize
    }

    /// Whether each digest is in the server's set, in order.
    public func breached(
        _ digests: [SHA1Digest],
        progress: (@Sendable (Int, Int) -> Void)? = nil
    ) async throws(BreachPSIError) -> [Bool] {
        let publication = try await transport.publication()
        guard publication.version == Int(BreachPSI.version) else {
            throw BreachPSIError(
                .unsupportedVersion,
                "\(transport.serverDescription) speaks breach-PSI version \(publication.version); this build speaks \(BreachPSI.version)"
            )
        }
        guard publication.bucketCount == BreachPSI.bucketCount, publication.entryLength == BreachPSI.entryLength else {
            throw BreachPSIError(
                .unsupportedParameters,
                "\(transport.serverDescription) uses \(publication.bucketCount) buckets of \(publication.entryLength)-byte entries; this build expects \(BreachPSI.bucketCount) of \(BreachPSI.entryLength)"
            )
        }
        let client = BreachPSIClient(publicKey: publication.publicKey)
        var results: [Bool] = []
        results.reserveCapacity(digests.count)
        var generator = SystemRandomNumberGenerator()
        let batches = requests(for: digests.count) / batchSize
        for batch in 0..<batches {
            let real = Array(
                digests[min(batch * batchSize, digests.count)..<min((batch + 1) * batchSize, digests.count)]
            )
            // (position in `real` or nil for padding, digest), shuffled.
            var slots: [(Int?, SHA1Digest)] = real.enumerated().map { ($0.offset, $0.element) }
            while slots.count < batchSize {
                var bytes = [UInt8](repeating: 0, count: 20)
                for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
                slots.append((nil, SHA1Digest(bytes: bytes)!))
            }
            slots.shuffle(using: &generator)
            var queries: [BreachPSIQuery] = []
            for slot in slots { queries.append(try client.query(slot.1)) }
            let answers = try await send(queries.map(\.request.encoded))
            var found = [Bool](repeating: false, count: real.count)
            for (index, slot) in slots.enumerated() {
                // Padding answers are verified too: a bad proof or another key is an error either way.
                let breached = try client.isBreached(queries[index], response: answers[index])
                if let position = slot.0 { found[position] = breached }
            }
            results += found
            progress?(results.count, digests.count)
        }
        return results
    }

    /// Sends a batch at once; the first failure ends it.
    func send(_ requests: [[UInt8]]) async throws(BreachPSIError) -> [[UInt8]] {
        let transport = self.transport
        do {
            return try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
                for (index, request) in requests.enumerated() {
                    group.addTask { (index, try await transport.send(request)) }
                }
                var answers = [[UInt8]](repeating: [], count: requests.count)
                for try await (index, answer) in group { answers[index] = answer }
                return answers
            }
        } catch let error as BreachPSIError {
            throw error
        } catch {
            throw BreachPSIError(.unreachable, "the batch to \(transport.serverDescription) failed: \(error)")
        }
    }
}
