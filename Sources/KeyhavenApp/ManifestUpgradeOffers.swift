public import AccountModification
public import SecurityRecommendations
import _KeyhavenSupport

/// The audit's “one-tap upgrade available” from the very reader `keyhaven upgrade` uses, so the
/// audit never advertises an upgrade that `upgrade` then refuses. One read per origin that answers.
public actor ManifestUpgradeOffers: UpgradeOfferSource {
    let reader: any ManifestReader
    private var cache: [ServiceOrigin: UpgradeOffer?] = [:]

    public init(reader: any ManifestReader) {
        self.reader = reader
    }

    public func upgradeOffer(service identifier: String) async -> UpgradeOffer? {
        guard let origin = ServiceOrigin(service: identifier) else { return nil }
        if let cached = cache[origin] { return cached }
        let offer: UpgradeOffer?
        do {
            let manifest = try await reader.manifest(for: origin)
            offer = UpgradeOffer(
                strongPassword: manifest.supportsStrongPasswordChange,
                signIn: manifest.supportsUpgradeToSignIn && manifest.signIn != nil,
                passkey: manifest.supportsUpgradeToPasskey == true
            )
        } catch  where error.code == .unreachable {
            // Not an answer: asked again next time (the audit's site knowledge says when).
            return nil
        } catch {
            offer = UpgradeOffer(strongPassword: false, signIn: false)
        }
        // A read cut short (the audit's time per site ran out) is not an answer either.
        if !Task.isCancelled { cache[origin] = offer }
        return offer
    }
}
