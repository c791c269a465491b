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
/// then random ones), in random order, so 1 password and 16 cause the same requests. A digest
/// held by several credentials (a reused password) is asked about once. The server's key is
/// fetched first and compared with ``pin`` (when given: another key is ``BreachPSIError/Code/keyNotPinned``
/// before anything is sent); without a pin the published key is trusted as it is (a server, or a
/// network attacker over plain http, could then answer "not breached" to everything). An answer
/// under any other key than the published one (the server changed its key mid-way) or with a bad
/// proof stops the check with an error, never a "not breached". A transport failure stops it at
/// once (the transport may wait and retry a 429 itself).
///
/// **The local list** (``localList``, issue 29 item 3): the most common leaked passwords, a compact
/// breach index on the device (`keyhaven breach top`). A digest found there is breached without
/// asking anyone, and its place in its batch goes to its stand-in (``standInKey``: the same every
/// run, so a server comparing runs sees the same buckets either way): the batches are those of the
/// same passwords without a local list (one per ``batchSize`` distinct digests), so the server
/// cannot count the passwords found locally, and never sees their buckets.
public struct BreachPSIChecker: Sendable {
    public let transport: any BreachPSITransport
    /// Requests per batch (the real digests padded with random ones).
    public let batchSize: Int
    /// The key the server must publish (nil: trusted as published).
    public let pin: BreachPSIKeyPin?
    /// The most common leaked passwords, looked up on the device before anything is sent (nil: none).
    public let localList: BreachIndex?
    /// Makes the stand-in of a digest found in ``localList`` (nil: a random digest each run, which a
    /// server comparing runs could tell from a real password; the audit always gives one).
    public let standInKey: BreachPSIStandInKey?
    /// Where padding digests come from (injected by tests; random by default).
    let randomDigest: @Sendable () -> SHA1Digest

    public init(
        transport: any BreachPSITransport,
        batchSize: Int = 16,
        pin: BreachPSIKeyPin? = nil,
        localList: BreachIndex? = nil,
        standInKey: BreachPSIStandInKey? = nil,
        randomDigest: @escaping @Sendable () -> SHA1Digest = { BreachPSIChecker.systemRandomDigest() }
    ) {
        self.transport = transport
        self.batchSize = max(batchSize, 1)
        self.pin = pin
        self.localList = localList
        self.standInKey = standInKey
        self.randomDigest = randomDigest
    }

    /// 20 bytes from the system's random source.
    public static func systemRandomDigest() -> SHA1Digest {
        var generator = SystemRandomNumberGenerator()
        return SHA1Digest(bytes: (0..<20).map { _ in UInt8.random(in: 0...255, using: &generator) })!
    }

    /// Which digests ``localList`` holds (all false without one), and the list's count for each (0
    /// when absent: a power of two at most the times the password was seen, as a compact index
    /// keeps it). A lookup that fails (a damaged list) counts as not found, so that digest is asked
    /// of the server, and the first failure is returned for a notice: never a "not breached" from
    /// the local list.
    public func localMatches(_ digests: [SHA1Digest]) -> (found: [Bool], counts: [Int], failure: BreachError?) {
        guard let localList else {
            return ([Bool](repeating: false, count: digests.count), [Int](repeating: 0, count: digests.count), nil)
        }
        var failure: BreachError?
        let counts = digests.map { digest in
            do throws(BreachError) {
                return try localList.count(of: digest)
            } catch {
                if failure == nil { failure = error }
                return 0
            }
        }
        return (counts.map { $0 > 0 }, counts, failure)
    }

    /// How many requests `count` digests cost: whole batches.
    public func requests(for count: Int) -> Int {
        max(1, (count + batchSize - 1) / batchSize) * batchSize
    }

    /// Whether each digest is in the server's set, in order. Equal digests are asked about once
    /// and share the answer (`progress` counts distinct digests).
    public func breached(
        _ digests: [SHA1Digest],
        progress: (@Sendable (Int, Int) -> Void)? = nil
    ) async throws(BreachPSIError) -> [Bool] {
        try await breached(digests, foundLocally: localMatches(digests).found, progress: progress)
    }

    /// Whether each digest is breached: `foundLocally[i]` (from ``localMatches(_:)``) is, without
    /// being sent (its stand-in takes its place in its batch); the others are asked of the
    /// server. The batches are the same whichever digests were found locally.
    public func breached(
        _ digests: [SHA1Digest],
        foundLocally: [Bool],
        progress: (@Sendable (Int, Int) -> Void)? = nil
    ) async throws(BreachPSIError) -> [Bool] {
        var distinct: [SHA1Digest] = []
        var position: [SHA1Digest: Int] = [:]
        let positions = digests.map { digest in
            if let known = position[digest] { return known }
            position[digest] = distinct.count
            distinct.append(digest)
            return distinct.count - 1
        }
        var local = [Bool](repeating: false, count: distinct.count)
        for (index, found) in zip(positions, foundLocally) where found { local[index] = true }
        let answers = try await breachedDistinct(distinct, local: local, progress: progress)
        return positions.map { answers[$0] }
    }

    func breachedDistinct(
        _ digests: [SHA1Digest],
        local: [Bool],
        progress: (@Sendable (Int, Int) -> Void)?
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
        if let pin, !pin.matches(publication.publicKey) {
            throw BreachPSIError(
                .keyNotPinned,
                "\(transport.serverDescription) publishes the key \(Hex.encode(publication.publicKey.id)), not the pinned \(Hex.encode(pin.id)); nothing was sent (ask its operator whether the key changed, then pin the new one)"
            )
        }
        let client = BreachPSIClient(publicKey: publication.publicKey)
        // The P-384 work (blinding, proof checks) runs on a thread of its own, never on Swift's
        // cooperative pool that the rest of the process shares (DedicatedThreadExecutor).
        let executor = DedicatedThreadExecutor(name: "keyhaven.breach-psi.client")
        defer { executor.finish() }
        var results: [Bool] = []
        results.reserveCapacity(digests.count)
        var generator = SystemRandomNumberGenerator()
        let batches = requests(for: digests.count) / batchSize
        for batch in 0..<batches {
            let range = min(batch * batchSize, digests.count)..<min((batch + 1) * batchSize, digests.count)
            let real = Array(digests[range])
            let knownHere = Array(local[range])
            // (position in `real` or nil for padding, digest), shuffled. A digest found locally is
            // breached already: its stand-in goes in its place.
            var slots: [(Int?, SHA1Digest)] = real.enumerated().map { offset, digest in
                knownHere[offset]
                    ? (Int?.none, standInKey?.standIn(for: digest) ?? randomDigest()) : (Int?.some(offset), digest)
            }
            while slots.count < batchSize { slots.append((nil, randomDigest())) }
            slots.shuffle(using: &generator)
            let batch = slots
            let queries = try await Self.onThread(executor) { () throws(BreachPSIError) in
                try batch.map { slot throws(BreachPSIError) in try client.query(slot.1) }
            }
            let answers = try await send(queries.map(\.request.encoded))
            let found = try await Self.onThread(executor) { () throws(BreachPSIError) in
                var found = knownHere
                for (index, slot) in batch.enumerated() {
                    // Padding answers are verified too: a bad proof or another key is an error either way.
                    let breached = try client.isBreached(queries[index], response: answers[index])
                    if let position = slot.0 { found[position] = breached }
                }
                return found
            }
            results += found
            progress?(results.count, digests.count)
        }
        return results
    }

    /// Runs `work` on `executor`'s thread.
    static func onThread<T>(
        _ executor: DedicatedThreadExecutor,
        _ work: () throws(BreachPSIError) -> T
    ) async throws(BreachPSIError) -> T {
        // The closure awaits an async function: a closure with no suspension point would run where
        // it was called (the cooperative pool), ignoring the preference.
        let result: Result<T, BreachPSIError> = await withTaskExecutorPreference(executor) {
            await perform(work)
        }
        return try result.get()
    }

    /// `work`'s result; async so that it starts on the task's preferred executor.
    static func perform<T>(_ work: () throws(BreachPSIError) -> T) async -> Result<T, BreachPSIError> {
        do throws(BreachPSIError) {
            return .success(try work())
        } catch {
            return .failure(error)
        }
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
