public enum RelyingPartyPlaceholder {}
