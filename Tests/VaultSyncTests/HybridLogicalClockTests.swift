import KeyhavenTesting
import Testing
import VaultSync

/// The clock's two rules, with wall clocks that stand still, jump back and lag behind.
struct HybridLogicalClockTests {
    let a = DeviceID(0xA)
    let b = DeviceID(0xB)

    @Test func sendFollowsTheWallClockAndCountsWithinAMillisecond() {
        var clock = HybridLogicalClock(device: a)
        #expect(clock.send(now: 1_000) == HLCTimestamp(physical: 1_000, counter: 0, device: a))
        #expect(clock.send(now: 1_000) == HLCTimestamp(physical: 1_000, counter: 1, device: a))
        #expect(clock.send(now: 1_005) == HLCTimestamp(physical: 1_005, counter: 0, device: a))
    }

    @Test func aWallClockThatGoesBackNeverMakesAnEarlierStamp() {
        var clock = HybridLogicalClock(device: a)
        let before = clock.send(now: 5_000)
        let after = clock.send(now: 1_000)  // the person set the clock back
        #expect(after > before)
        #expect(after == HLCTimestamp(physical: 5_000, counter: 1, device: a))
    }

    @Test func receiveMovesPastARemoteStampFromTheFuture() {
        var slow = HybridLogicalClock(device: a)
        _ = slow.send(now: 1_000)
        let remote = HLCTimestamp(physical: 9_000, counter: 4, device: b)
        #expect(slow.receive(remote, now: 1_001) == HLCTimestamp(physical: 9_000, counter: 5, device: a))
        // The next local write comes after what was seen, though the wall clock says 1_002.
        let next = slow.send(now: 1_002)
        #expect(next > remote)
        #expect(next == HLCTimestamp(physical: 9_000, counter: 6, device: a))
    }

    @Test func receiveRules() {
        var clock = HybridLogicalClock(device: a, latest: HLCTimestamp(physical: 100, counter: 3, device: a))
        // Same physical time on both sides: the larger counter, plus one.
        #expect(clock.receive(HLCTimestamp(physical: 100, counter: 7, device: b), now: 50).counter == 8)
        // Local time ahead of the remote one: the local counter, plus one.
        #expect(clock.receive(HLCTimestamp(physical: 90, counter: 70, device: b), now: 50).counter == 9)
        // The wall clock ahead of both: counter 0.
        #expect(
            clock.receive(HLCTimestamp(physical: 90, counter: 70, device: b), now: 200)
                == HLCTimestamp(physical: 200, counter: 0, device: a)
        )
    }

    @Test func counterOverflowMovesThePhysicalPartInstead() {
        var clock = HybridLogicalClock(device: a, latest: HLCTimestamp(physical: 10, counter: .max, device: a))
        let next = clock.send(now: 10)
        #expect(next == HLCTimestamp(physical: 11, counter: 0, device: a))
    }

    @Test func stampsAreTotallyOrderedAndTiesGoToTheDevice() {
        let x = HLCTimestamp(physical: 1, counter: 2, device: a)
        let y = HLCTimestamp(physical: 1, counter: 2, device: b)
        #expect(x < y && !(y < x) && x != y)
        #expect(HLCTimestamp(physical: 1, counter: 9, device: b) < HLCTimestamp(physical: 2, counter: 0, device: a))
        #expect(x.description == "1.2@000000000000000a")
    }

    @Test func stampsAreStrictlyIncreasingUnderRandomClocks() {
        var generator = SeededRandomNumberGenerator(seed: 7)
        var clock = HybridLogicalClock(device: a)
        var last = clock.latest
        for _ in 0..<10_000 {
            let now = UInt64.random(in: 0..<1_000, using: &generator)
            let next: HLCTimestamp
            if Bool.random(using: &generator) {
                next = clock.send(now: now)
            } else {
                let remote = HLCTimestamp(
                    physical: .random(in: 0..<1_200, using: &generator),
                    counter: .random(in: 0..<5, using: &generator),
                    device: b
                )
                next = clock.receive(remote, now: now)
                #expect(next > remote)
            }
            #expect(next > last)
            last = next
        }
    }
}
