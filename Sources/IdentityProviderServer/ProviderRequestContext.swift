import Foundation
import HTTPTypes
import Hummingbird
import IdentityProvider
public import _KeyhavenWeb

/// The provider's request context: `_KeyhavenWeb`'s, which carries the peer's address (the
/// sign-in throttle counts wrong guesses against it) and answers JSON in the one style.
public typealias ProviderRequestContext = WebRequestContext

extension ProviderServer {
    /// Who is signing in, for the per-address throttle: the connection's peer, unless the peer is
    /// one of ``trustedProxies`` and ``clientAddressHeader`` is set: then the header's entries are
    /// read from the right (the one the nearest proxy appended), skipping trusted proxies, and the
    /// first other one is the client. Entries further left are whatever the client claimed, so
    /// they are never used; a client reaching the server directly cannot choose its address.
    func clientAddress(_ request: Request, _ context: ProviderRequestContext) -> String? {
        let peer = context.remoteAddress?.ipAddress
        guard let header = clientAddressHeader, let name = HTTPField.Name(header), let peer,
            trustedProxies.contains(peer)
        else { return peer }
        let entries = request.headers[values: name].joined(separator: ",").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        return entries.reversed().first { !$0.isEmpty && !trustedProxies.contains($0) } ?? peer
    }

    /// Checks a sign-in form (`email`, `password`, `code`) from the request's client, and the
    /// browser's known-device cookie (its attempts then have their own counter).
    func authenticate(
        _ form: [String: String],
        _ request: Request,
        _ context: ProviderRequestContext
    ) async throws -> Authentication {
        try await provider.authenticate(
            email: form["email"] ?? "",
            password: form["password"] ?? "",
            code: form["code"],
            from: clientAddress(request, context),
            knownDevice: Self.cookie(Self.deviceCookie, in: request)
        )
    }

    /// The sign-in page again, with why the attempt failed (asking for the code when needed).
    static func signInAgain(
        _ error: ProviderError,
        action: String,
        serviceName: String?,
        fields: [(String, String)],
        form: [String: String],
        formAction: String? = nil
    ) -> Response {
        html(
            ProviderPages.signIn(
                action: action,
                serviceName: serviceName,
                fields: fields,
                loginToken: form["login_token"] ?? "",
                email: form["email"] ?? "",
                error: error.message,
                askCode: error.code == .secondFactorRequired || form["code"] != nil
            ),
            status: signInStatus(error),
            headers: retryHeaders(error),
            formAction: formAction
        )
    }

    /// Headers of a sign-in answer: `Retry-After` while sign-in is locked.
    static func retryHeaders(_ error: ProviderError) -> HTTPFields {
        var fields = HTTPFields()
        if let seconds = error.retryAfter { fields[.retryAfter] = String(seconds) }
        return fields
    }

    static func signInStatus(_ error: ProviderError) -> HTTPResponse.Status {
        switch error.code {
        case .secondFactorRequired: .ok
        case .tooManyAttempts: .tooManyRequests
        case .unavailable: .serviceUnavailable
        default: .unauthorized
        }
    }
}
