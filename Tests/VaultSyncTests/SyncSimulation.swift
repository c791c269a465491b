import Crypto
import KeyhavenTesting
import VaultSync

/// Five devices (by default) editing one vault offline and syncing through the reference server
/// in a random order, with skewed and jumping clocks, lost requests and lost answers — all drawn
/// from one seed, so a failing run is replayed exactly from the seed it prints.
///
/// Every write any device makes is recorded; ``run()`` then lets every device sync until nothing
/// is pending and reports each way the two promises were broken: replicas that are not
/// byte-identical to the server, and committed values that are neither current nor in history.
struct SyncSimulation {
    struct Report: Sendable {
        var seed: UInt64
        var operations = 0
        var writes = 0
        var deletions = 0
        var items = 0
        var deletedItems = 0
        var staleAnswers = 0
        var lostRequests = 0
        var lostAnswers = 0
        var conflictMarks = 0
        var resolutions = 0
        /// Field values found readable in what the server stores.
        var plaintextHits = 0
        var violations: [String] = []
    }

    /// One committed write: which item and field, its stamp, and what it wrote.
    struct Committed {
        var item: ItemID
        var field: FieldKey
        var stamp: HLCTimestamp
        var value: FieldValue
    }

    let seed: UInt64
    let operations: Int
    var generator: SeededRandomNumberGenerator
    var server = ReferenceSyncServer()
    var replicas: [SyncReplica]
    var online: [Bool]
    /// Each device's wall clock: the simulation's time plus this skew (milliseconds, ± 5 min).
    var skew: [Int64]
    var time: UInt64 = 1_767_225_600_000
    var committed: [Committed] = []
    /// Every item created, on any device, in order.
    var created: [ItemID] = []
    var nextValue = 0
    var report: Report
    /// Set when devices seal what they send (the server then stores only ciphertext).
    var sealing: SealedPayloads<SeededRandomNumberGenerator>?

    init(seed: UInt64, operations: Int, devices: Int = 5, sealed: Bool = false) {
        self.seed = seed
        self.operations = operations
        var generator = SeededRandomNumberGenerator(seed: seed)
        replicas = (0..<devices).map { _ in SyncReplica(device: DeviceID(using: &generator)) }
        skew = (0..<devices).map { _ in Int64.random(in: -300_000...300_000, using: &generator) }
        self.generator = generator
        online = Array(repeating: true, count: devices)
        report = Report(seed: seed)
        if sealed {
            // A generator of its own, so that a sealed run makes the same operations as a plain one.
            var keys = SeededRandomNumberGenerator(seed: ~seed)
            let vaultKey = SymmetricKey(data: (0..<32).map { _ in UInt8.random(in: 0...255, using: &keys) })
            sealing = SealedPayloads(
                sealer: ItemSealer(vaultKey: vaultKey, vault: VaultID(using: &keys)),
                generator: keys
            )
        }
    }

    func now(_ device: Int) -> UInt64 { UInt64(Int64(time) + skew[device]) }

    mutating func run() -> Report {
        for _ in 0..<operations {
            step()
            report.operations += 1
        }
        converge()
        check()
        return report
    }

    // MARK: One random operation

    mutating func step() {
        time += UInt64.random(in: 0..<3_000, using: &generator)
        let device = Int.random(in: 0..<replicas.count, using: &generator)
        let roll = Int.random(in: 0..<100, using: &generator)
        do {
            switch roll {
            case 0..<4: create(on: device)
            case 4..<52: try edit(on: device)
            case 52..<55: try deleteItem(on: device)
            case 55..<58: try resolve(on: device)
            case 58..<64: online[device].toggle()
            case 64..<65: skew[device] = Int64.random(in: -300_000...300_000, using: &generator)  // the clock jumps
            default:
                guard online[device] else { return }
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: try pull(device)
                case 1: try pushOne(device, faults: true)
                default: try sync(device, faults: true)
                }
            }
        } catch {
            report.violations.append("seed \(seed): device \(device) failed: \(String(reflecting: error))")
        }
    }

    mutating func freshValue(for field: FieldKey) -> FieldValue {
        nextValue += 1
        let n = nextValue
        if field.isPasskey { return n % 4 == 0 ? .absent : .bytes([UInt8(truncatingIfNeeded: n), UInt8(n % 7)]) }
        if field == .services { return .list(["https://s\(n).example", "https://m.s\(n).example"]) }
        if n % 11 == 0 { return .absent }  // a field cleared
        if n % 13 == 0 { return .text("same") }  // equal values written apart
        return .text("\(field)-\(n)")
    }

    mutating func create(on device: Int) {
        let id = ItemID(using: &generator)
        var values: [FieldKey: FieldValue] = [:]
        for field in [FieldKey.title, .user, .password, .folder, .services] { values[field] = freshValue(for: field) }
        let record = replicas[device].create(id, values: values, now: now(device))
        created.append(id)
        for (field, version) in record.fields { remember(id, field, version) }
        report.items += 1
    }

    /// A rename (title), a move (folder), a password change, a passkey added or removed…
    mutating func edit(on device: Int) throws {
        guard let item = randomItem(on: device) else { return }
        let field = RecordFixtures.fields.randomElement(using: &generator)!
        let value = freshValue(for: field)
        if try replicas[device].set(field, to: value, in: item, now: now(device)) {
            remember(item, field, replicas[device].records[item]!.fields[field]!)
        }
    }

    mutating func deleteItem(on device: Int) throws {
        guard let item = randomItem(on: device) else { return }
        try replicas[device].delete(item, now: now(device))
        report.deletions += 1
    }

    /// The person picks one side of a conflict (or keeps the current value).
    mutating func resolve(on device: Int) throws {
        guard let item = randomItem(on: device), let conflict = replicas[device].records[item]?.conflicts.first
        else { return }
        let keep = Bool.random(using: &generator) ? conflict.other.value : conflict.current.value
        try replicas[device].resolveConflicts(in: item, field: conflict.field, keeping: keep, now: now(device))
        remember(item, conflict.field, replicas[device].records[item]!.fields[conflict.field]!)
        report.resolutions += 1
    }

    /// One of the device's items: a few draws among every item created anywhere (a device knows
    /// another's items only once it pulled them).
    mutating func randomItem(on device: Int) -> ItemID? {
        guard !created.isEmpty else { return nil }
        for _ in 0..<3 {
            let item = created[Int.random(in: 0..<created.count, using: &generator)]
            if replicas[device].records[item] != nil { return item }
        }
        return nil
    }

    mutating func remember(_ item: ItemID, _ field: FieldKey, _ version: FieldVersion) {
        committed.append(Committed(item: item, field: field, stamp: version.stamp, value: version.value))
        report.writes += 1
    }

    // MARK: Talking to the server

    mutating func pull(_ device: Int) throws {
        let batch = server.changes(since: replicas[device].cursor)
        if let sealing {
            try replicas[device].apply(batch, now: now(device), decoding: sealing)
        } else {
            try replicas[device].apply(batch, now: now(device))
        }
    }

    mutating func nextMutation(_ device: Int) throws -> Mutation? {
        guard var codec = sealing else { return replicas[device].nextMutation() }
        defer { sealing = codec }
        return try replicas[device].nextMutation(encoding: &codec)
    }

    func decode(_ item: ServerItem) throws -> SyncRecord {
        try sealing?.decode(item.payload, item: item.item, version: item.revision)
            ?? SyncRecord(canonicalBytes: item.payload)
    }

    /// Sends one mutation; with `faults`, the request or the answer may be lost.
    mutating func pushOne(_ device: Int, faults: Bool) throws {
        guard let mutation = try nextMutation(device) else { return }
        let fault = faults ? Int.random(in: 0..<10, using: &generator) : 9
        if fault == 0 {
            report.lostRequests += 1
            return
        }
        let answer = server.push(mutation)
        if fault == 1 {
            report.lostAnswers += 1
            return
        }
        if case .stale = answer { report.staleAnswers += 1 }
        let outcome =
            try sealing.map { try replicas[device].handle(answer, to: mutation, now: now(device), decoding: $0) }
            ?? replicas[device].handle(answer, to: mutation, now: now(device))
        if case .rejected(let reason) = outcome {
            report.violations.append("seed \(seed): the server refused a write: \(reason)")
        }
    }

    /// A full sync: pull, then push until the outbox is empty (or a fault stops it).
    mutating func sync(_ device: Int, faults: Bool) throws {
        try pull(device)
        // Each item needs at most two pushes when nothing is lost: a stale answer, then the merge.
        let limit = 2 * replicas[device].outbox.entries.count + 1
        var rounds = 0
        while !replicas[device].outbox.isEmpty {
            let before = (report.lostRequests, report.lostAnswers)
            try pushOne(device, faults: faults)
            if (report.lostRequests, report.lostAnswers) != before { return }  // the connection dropped
            rounds += 1
            if rounds > limit {
                report.violations.append("seed \(seed): device \(device)'s outbox does not drain")
                return
            }
        }
    }

    // MARK: The end: everyone comes online

    mutating func converge() {
        for round in 0... {
            let order = Array(replicas.indices).shuffled(using: &generator)
            for device in order {
                online[device] = true
                do { try sync(device, faults: false) } catch {
                    report.violations.append("seed \(seed): final sync of device \(device) failed: \(error)")
                    return
                }
            }
            if replicas.allSatisfy(\.outbox.isEmpty) { break }
            if round == 20 {
                report.violations.append("seed \(seed): outboxes still pending after 20 rounds")
                return
            }
        }
        for device in replicas.indices {
            do { try pull(device) } catch {
                report.violations.append("seed \(seed): final pull of device \(device) failed: \(error)")
            }
        }
    }

    static func contains(_ bytes: [UInt8], _ marker: [UInt8]) -> Bool {
        guard bytes.count >= marker.count, let first = marker.first else { return false }
        for start in 0...(bytes.count - marker.count) where bytes[start] == first {
            if bytes[start..<start + marker.count].elementsEqual(marker) { return true }
        }
        return false
    }

    mutating func check() {
        var converged: [ItemID: SyncRecord] = [:]
        for (id, item) in server.items {
            do { converged[id] = try decode(item) } catch {
                report.violations.append("seed \(seed): the server's item \(id) does not decode: \(error)")
            }
        }
        for (index, replica) in replicas.enumerated() {
            if Set(replica.records.keys) != Set(server.items.keys) {
                report.violations.append("seed \(seed): device \(index) holds other items than the server")
            }
            for (id, record) in replica.records where record.canonicalBytes != converged[id]?.canonicalBytes {
                report.violations.append("seed \(seed): device \(index)'s item \(id) differs from the server's")
            }
        }
        for write in committed {
            guard let record = converged[write.item] else {
                report.violations.append("seed \(seed): item \(write.item) never reached the server")
                continue
            }
            if record.version(of: write.field, stamped: write.stamp)?.value != write.value {
                report.violations.append(
                    "seed \(seed): item \(write.item) lost its \(write.field) written at \(write.stamp)"
                )
            }
        }
        report.deletedItems = converged.values.filter(\.isDeleted).count
        // What the server stores, scanned for the values' markers (every text value starts with
        // its field's name and a dash, every service is an https URL).
        let markers = ["title-", "user-", "password-", "notes-", "totp-", "folder-", "signIn-", "https://"].map {
            Array($0.utf8)
        }
        for item in server.items.values {
            for marker in markers where Self.contains(item.payload, marker) { report.plaintextHits += 1 }
        }
        report.conflictMarks = converged.values.reduce(0) { $0 + $1.conflicts.count }
    }
}
