public import _KeyhavenSupport

/// A protocol error: one of Apple's `ASExtensionError` codes or Keyhaven's own, with a reason a
/// person can read (never a secret).
public struct AutoFillError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        // ASExtensionError
        case failed
        case userCanceled
        case userInteractionRequired
        case credentialIdentityNotFound
        case matchedExcludedCredential
        // Keyhaven
        case locked
        case notPaired
        case originNotAllowed
        case badRequest
        /// `unlock` with a wrong master password.
        case wrongPassword
        /// A passkey request that asks to verify the person after the unlock grew old: the
        /// chooser asks for the master password again.
        case userVerificationRequired
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code.rawValue): \(reason)" }

    /// `{"code": …, "localizedFailureReason": …}`.
    public var json: JSONValue {
        ["code": .string(code.rawValue), "localizedFailureReason": .string(reason)]
    }
}
