public import _KeyhavenSupport

extension SyncError.Code {
    /// The credential named has no conflict (on the field named): nothing to resolve.
    public static var noConflict: Self { Self(#function) }
}
