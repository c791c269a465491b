public import _KeyhavenSupport

extension IdentityTokenClaims: JSONObjectWritable {
    public func writeJSON(into writer: inout JSONWriter) {
        writer.string("iss", iss)
        writer.string("aud", aud)
        writer.integer("exp", exp)
        writer.integer("iat", iat)
        writer.string("sub", sub)
        writer.string("nonce", nonce)
        writer.string("c_hash", c_hash)
        writer.string("at_hash", at_hash)
        writer.string("email", email)
        for (name, claim) in [("email_verified", email_verified), ("is_private_email", is_private_email)] {
            guard let claim else { continue }
            if claim.asString {
                writer.string(name, claim.value ? "true" : "false")
            } else {
                writer.bool(name, claim.value)
            }
        }
        writer.integer("auth_time", auth_time)
        writer.bool("nonce_supported", nonce_supported)
        writer.integer("real_user_status", real_user_status.map(Int64.init))
        writer.string("transfer_sub", transfer_sub)
    }
}
