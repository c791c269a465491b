import Foundation
import KeyhavenTesting
import Passkeys
import Testing
import Vault
import VaultSync
import VaultSyncBridge

/// What a server gets of a credential: ciphertext only, the overview apart from the details, and
/// nothing that opens once altered or moved.
struct SealedCredentialTests {
    let item = ItemID(high: 28, low: 3)
    static let created = Date(timeIntervalSince1970: 1_700_000_000)

    /// Markers of the overview's fields (what lists and AutoFill may open alone).
    static let overviewMarkers = [
        "CANARY-title-5e1d", "canary-service-5e1d.example", "CANARY-user-5e1d", "CANARY-folder-5e1d",
    ]
    /// Markers of every other field type: password and its history, notes, TOTP secret, sign-in
    /// link, passkey (its texts, handles and private key).
    static let detailsMarkers = [
        "CANARY-password-5e1d", "CANARY-old-password-5e1d", "CANARY-notes-5e1d", "CANARYTOTP5E1DSECRET",
        "https://canary-issuer-5e1d.example", "CANARY-subject-5e1d", "canary-rp-5e1d.example",
        "CANARY-passkey-user-5e1d", "CANARY-passkey-name-5e1d",
    ]
    static let byteMarkers: [[UInt8]] = [
        Array("CANARY-credential-id-5e1d".utf8) + [0xC1, 0xA2], Array("CANARY-user-handle-5e1d".utf8) + [0xFE],
        Array("CANARY-private-key-5e1d!!!!!!!!!".utf8),
    ]

    static let canary = SyncedCredential(
        content: CredentialContent(
            title: "CANARY-title-5e1d",
            services: [ServiceIdentifier("https://canary-service-5e1d.example/login")],
            user: "CANARY-user-5e1d",
            password: "CANARY-password-5e1d",
            notes: "CANARY-notes-5e1d",
            totp: "CANARYTOTP5E1DSECRET",
            folder: "CANARY-folder-5e1d",
            signIn: SignInLink(
                issuer: "https://canary-issuer-5e1d.example",
                subject: "CANARY-subject-5e1d",
                linked: created
            )
        ),
        passwordHistory: [
            PasswordHistoryEntry(password: "CANARY-old-password-5e1d", replaced: created.addingTimeInterval(60))
        ],
        passkeys: [
            PasskeyCredential(
                rpID: "canary-rp-5e1d.example",
                credentialID: byteMarkers[0],
                userHandle: byteMarkers[1],
                userName: "CANARY-passkey-user-5e1d",
                userDisplayName: "CANARY-passkey-name-5e1d",
                algorithm: -7,
                privateKey: byteMarkers[2],
                created: created
            )
        ],
        created: created
    )

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
    }

    static var allMarkers: [[UInt8]] { (overviewMarkers + detailsMarkers).map { Array($0.utf8) } + byteMarkers }

    @Test func noMarkerOfAnyFieldTypeIsInTheSealedBytesOrOnTheServer() throws {
        let record = try CredentialRecordMapping.record(for: Self.canary, id: item, device: DeviceID(1))
        // The scan finds every marker where it is in the clear: in the record itself.
        for marker in Self.allMarkers { #expect(Self.contains(record.canonicalBytes, marker)) }

        var codec = CredentialFixtures.codec(seed: 5)
        let payload = try codec.encode(record, version: 1)
        for marker in Self.allMarkers { #expect(!Self.contains(payload, marker), "\(marker) is in the sealed bytes") }

        // Through a replica and the server: every payload it stores is ciphertext.
        var replica = SyncReplica(device: DeviceID(1))
        var server = ReferenceSyncServer()
        try replica.adopt(Self.canary, as: item, now: CredentialFixtures.later)
        while let mutation = try replica.nextMutation(encoding: &codec) {
            try replica.handle(server.push(mutation), to: mutation, now: 1, decoding: codec)
        }
        let stored = try #require(server.items[item])
        for marker in Self.allMarkers { #expect(!Self.contains(stored.payload, marker)) }
        #expect(
            try CredentialRecordMapping.credential(from: codec.decode(stored.payload, item: item, version: 1))
                == Self.canary
        )
    }

    @Test func theOverviewOpensAloneAndHoldsNoneOfTheDetails() throws {
        var codec = CredentialFixtures.codec(seed: 6)
        let record = try CredentialRecordMapping.record(for: Self.canary, id: item, device: DeviceID(1))
        let sealed = try SealedItem(bytes: codec.encode(record, version: 1), item: item, version: 1)
        let overview = try codec.sealer.openOverview(sealed, item: item, version: 1)
        let plaintext = overview.record.canonicalBytes
        for marker in Self.overviewMarkers { #expect(Self.contains(plaintext, Array(marker.utf8))) }
        for marker in Self.detailsMarkers.map({ Array($0.utf8) }) + Self.byteMarkers {
            #expect(!Self.contains(plaintext, marker), "\(marker) is in the overview")
        }
        let listed = try CredentialRecordMapping.credential(from: overview.record)
        #expect(listed.content.title == "CANARY-title-5e1d" && listed.content.password == nil)
        #expect(listed.passkeys.isEmpty && !overview.isDeleted)
    }

    @Test func analteredOrMovedPayloadDoesNotOpen() throws {
        var codec = CredentialFixtures.codec(seed: 7)
        let record = try CredentialRecordMapping.record(for: Self.canary, id: item, device: DeviceID(1))
        let payload = try codec.encode(record, version: 2)
        let cannotOpen = VaultSyncError(.cannotOpen, "")
        #expect(try codec.decode(payload, item: item, version: 2) == record)

        // One flipped bit anywhere: the header, the wrapped key, the overview, the details.
        for index in stride(from: 0, to: payload.count, by: 7) {
            var altered = payload
            altered[index] ^= 0x10
            #expect(throws: cannotOpen) { try codec.decode(altered, item: item, version: 2) }
        }
        // Another item's, another version's, another vault's.
        #expect(throws: cannotOpen) { try codec.decode(payload, item: ItemID(high: 28, low: 4), version: 2) }
        #expect(throws: cannotOpen) { try codec.decode(payload, item: item, version: 1) }
        #expect(throws: cannotOpen) { try CredentialFixtures.codec(seed: 8).decode(payload, item: item, version: 2) }
        // The overview and details swapped.
        var sealed = try SealedItem(bytes: payload, item: item, version: 2)
        (sealed.overview, sealed.details) = (sealed.details, sealed.overview)
        #expect(throws: cannotOpen) { try codec.decode(sealed.bytes, item: item, version: 2) }

        // A replica given an altered payload keeps what it had.
        var replica = SyncReplica(device: DeviceID(2))
        var altered = payload
        altered[payload.count - 1] ^= 1
        let batch = ChangeBatch(
            items: [ServerItem(item: item, revision: 2, payload: altered, sequence: 1)],
            sequence: 1
        )
        do {
            try replica.apply(batch, now: 0, decoding: codec)
            Issue.record("an altered payload was applied")
        } catch {
            #expect(error == cannotOpen)
        }
        #expect(replica.records.isEmpty && replica.cursor == 0)
    }

    /// Not a timed test: what one credential costs sealed (docs/sync.md "Sizes"). Prints the sizes.
    @Test func theSealedSizeOfATypicalCredential() throws {
        var codec = CredentialFixtures.codec(seed: 9)
        let typical = SyncedCredential(
            content: CredentialContent(
                title: "GitHub",
                services: [ServiceIdentifier("github.com")],
                user: "ada.lovelace@example.com",
                password: "vQ7#kd93-Lm2x!pZr4Ws"
            ),
            created: Self.created
        )
        var withHistory = typical
        withHistory.passwordHistory = (1...3).map {
            PasswordHistoryEntry(
                password: "old-password-\($0)-xxxxxxx",
                replaced: Self.created.addingTimeInterval(Double($0) * 86_400)
            )
        }
        for (name, credential) in [("typical", typical), ("typical, 3 old passwords", withHistory)] {
            let record = try CredentialRecordMapping.record(for: credential, id: item, device: DeviceID(1))
            let sealed = try SealedItem(bytes: codec.encode(record, version: 1), item: item, version: 1)
            let overview = try codec.sealer.openOverview(sealed, item: item, version: 1).record.canonicalBytes.count + 1
            // Each box is a 12-byte nonce, the ciphertext and a 16-byte tag; the stored form adds 13 bytes.
            // The details part is the record of the other fields: here, the password and its history.
            let detailsOnly = SyncedCredential(
                content: CredentialContent(password: credential.content.password),
                passwordHistory: credential.passwordHistory,
                created: credential.created
            )
            let details = try CredentialRecordMapping.record(for: detailsOnly, id: item, device: DeviceID(1))
                .canonicalBytes.count
            let (overviewBucket, detailsBucket) = (sealed.overview.count - 28, sealed.details.count - 28)
            #expect(detailsBucket == SizeBuckets.bucket(for: details))
            #expect(sealed.wrappedKey.count == 60)
            #expect(overviewBucket == SizeBuckets.bucket(for: overview))
            #expect(sealed.bytes.count == 13 + 60 + 28 + overviewBucket + 28 + detailsBucket)
            print(
                "sealed size, \(name): record \(record.canonicalBytes.count) B in the clear; sealed \(sealed.bytes.count) B "
                    + "(header 13, wrapped key 60, overview \(overview) B padded to \(overviewBucket) + 28, details "
                    + "\(details) B padded to \(detailsBucket) + 28)"
            )
        }
    }
}
