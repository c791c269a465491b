public import _KeyhavenSupport

extension HTML {
    /// `<input type="hidden" name="NAME" value="VALUE">`, both escaped: a form's CSRF token, or the
    /// parameters a form carries on.
    public static func hiddenField(_ name: String, _ value: String) -> HTML {
        HTML(#"<input type="hidden" name="\#(name)" value="\#(value)">"#)
    }
}
