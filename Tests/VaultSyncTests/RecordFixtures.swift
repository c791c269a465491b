import VaultSync

/// Random records for the merge and encoding tests.
enum RecordFixtures {
    static let fields: [FieldKey] = [
        .title, .services, .user, .password, .notes, .totp, .folder, .signIn, .passkey("k1"), .passkey("k2"),
    ]

    /// A random value for `field` (sometimes absent).
    static func value(for field: FieldKey, using generator: inout some RandomNumberGenerator) -> FieldValue {
        let n = Int.random(in: 0..<1_000, using: &generator)
        if n % 10 == 0 { return .absent }
        if field == .services { return .list((0..<(n % 3)).map { "https://s\($0 + n).example" }) }
        if field.isPasskey { return .bytes((0..<(n % 40)).map { UInt8(truncatingIfNeeded: $0 &* n) }) }
        return .text(n % 7 == 0 ? "é \u{1F511} \(n)" : "v\(n)")
    }

    /// `count` replicas of one item, created on device 1, then edited and deleted apart on devices
    /// 1…count with skewed clocks, occasionally merging with each other on the way.
    static func divergentReplicas(
        of id: ItemID,
        count: Int,
        edits: Int,
        using generator: inout some RandomNumberGenerator
    ) -> [SyncRecord] {
        var clocks = (1...count).map { HybridLogicalClock(device: DeviceID(UInt64($0))) }
        let initial = SyncRecord.created(
            id: id,
            values: [.title: .text("t"), .password: .text("p")],
            stamp: clocks[0].send(now: 1_000)
        )
        var replicas = Array(repeating: initial, count: count)
        for index in clocks.indices { clocks[index].receive(initial.latestStamp!, now: 1_000) }
        for step in 0..<edits {
            let index = Int.random(in: 0..<count, using: &generator)
            let now = UInt64(1_000 + step * 10) + UInt64.random(in: 0..<500, using: &generator)
            switch Int.random(in: 0..<10, using: &generator) {
            case 0: replicas[index].delete(stamp: clocks[index].send(now: now))
            case 1:
                let other = Int.random(in: 0..<count, using: &generator)
                replicas[index] = try! replicas[index].merged(with: replicas[other])
                clocks[index].receive(replicas[index].latestStamp!, now: now)
            case 2:
                if let conflict = replicas[index].conflicts.first {
                    replicas[index].resolveConflicts(
                        in: conflict.field,
                        keeping: conflict.other.value,
                        stamp: clocks[index].send(now: now)
                    )
                }
            default:
                let field = fields.randomElement(using: &generator)!
                replicas[index].set(
                    field,
                    to: value(for: field, using: &generator),
                    stamp: clocks[index].send(now: now)
                )
            }
        }
        return replicas
    }
}
