public import Crypto
import VaultSync

/// A device's own Ed25519 key pair (made on the device, never sent): what it signs challenges,
/// approvals and its own enrolment with, in the messages of ``VaultSync/DeviceSignatures`` — the
/// same code the server verifies them with. ``SyncHTTPClient`` signs (each message naming its
/// server's origin); an approval is ``SyncHTTPClient/approval(of:)``.
public struct SyncDeviceKey: Sendable {
    public let privateKey: Curve25519.Signing.PrivateKey

    public init(_ privateKey: Curve25519.Signing.PrivateKey = Curve25519.Signing.PrivateKey()) {
        self.privateKey = privateKey
    }

    /// The raw public key (32 bytes), what the server stores.
    public var publicKey: [UInt8] { Array(privateKey.publicKey.rawRepresentation) }

    /// The device's id on the server (``VaultSync/DeviceSignatures/deviceID(publicKey:)``).
    public var id: String { DeviceSignatures.deviceID(publicKey: publicKey) }

    func sign(_ message: [UInt8]) throws(SyncClientError) -> [UInt8] {
        do {
            return Array(try privateKey.signature(for: message))
        } catch {
            throw SyncClientError(
                .unauthorized,
                "this device's key could not sign (the cryptographic library refused it)"
            )
        }
    }
}
