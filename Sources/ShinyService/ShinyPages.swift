import Foundation
import _KeyhavenSupport
import _KeyhavenWeb

/// shiny's HTML: plain pages; the only script is shiny's own file (`/assets/shiny-passkeys.js`, on
/// the pages that use passkeys); element ids are stable (browser tests use them). Every form
/// carries the browser's CSRF token (`csrf`).
enum ShinyPages {
    /// A page in Keyhaven's one look (``DesignSystem``; shiny serves the style sheet at its path).
    static func page(_ title: String, _ body: HTML) -> HTML {
        DesignSystem.sheet(title: title, brand: "shiny", body: body)
    }

    /// The hidden CSRF field.
    static func csrfField(_ token: String) -> HTML { .hiddenField("csrf", token) }

    static func message(_ title: String, _ text: String) -> HTML {
        page(title, "<p id=\"result\" class=\"error\">\(text)</p>")
    }

    static func home() -> HTML {
        page(
            "shiny",
            """
            <p>An example service that lets Keyhaven upgrade its accounts.</p>
            <p><a id="signup" href="/signup">Create an account</a> · <a id="signin" href="/signin">Sign in</a></p>
            """
        )
    }

    static func signUp(csrf: String, error: String? = nil) -> HTML {
        page(
            "Create an account",
            """
            \(error.map { HTML("<p class=\"error\" id=\"error\">\($0)</p>") } ?? "")
            <form method="post" action="/signup">
            \(csrfField(csrf))
            <label for="user">User name</label><input id="user" name="user" autocomplete="username" required>
            <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="new-password" required>
            <label><input type="checkbox" name="totp" value="1"> Protect with an authenticator code (TOTP)</label>
            <button id="create" type="submit">Create account</button>
            </form>
            """
        )
    }

    static func signIn(csrf: String, error: String? = nil, askCode: Bool = false, user: String = "") -> HTML {
        page(
            "Sign in",
            """
            \(error.map { HTML("<p class=\"error\" id=\"error\">\($0)</p>") } ?? "")
            <form method="post" action="/signin">
            \(csrfField(csrf))
            <label for="user">User name</label><input id="user" name="user" value="\(user)" autocomplete="username webauthn" required>
            <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
            \(askCode ? HTML("<label for=\"code\">Authenticator code</label><input id=\"code\" name=\"code\" inputmode=\"numeric\" autocomplete=\"one-time-code\">") : "")
            <button id="submit" type="submit">Sign in</button>
            </form>
            <p><a href="/signin/keyhaven" id="sign-in-with-keyhaven">Sign in with Keyhaven</a></p>
            <p><button id="passkey-signin" type="button" class="secondary">Sign in with a passkey</button></p>
            <p id="passkey-status" role="status"></p>
            <div id="passkey-config" data-csrf="\(csrf)" hidden></div>
            <script src="/assets/shiny-passkeys.js"></script>
            """
        )
    }

    static func account(user: String, totp: String?, linked: Bool) -> HTML {
        page(
            "Your account",
            """
            <p id="welcome">Signed in as <strong>\(user)</strong>.</p>
            \(totp.map { HTML("<p>Authenticator secret: <code id=\"totp-secret\">\($0)</code></p>") } ?? "")
            \(linked ? HTML("<p id=\"linked\">This account signs in with Keyhaven.</p>") : HTML("<p><a href=\"/account/password\">Change your password</a></p>"))
            <p><a id="passkeys" href="/account/passkeys">Passkeys</a></p>
            """
        )
    }

    /// The account's passkeys: each with its remove form, "Add a passkey", and the signals the
    /// script sends on load (`data-accepted`: the credential ids shiny accepts).
    static func passkeys(
        csrf: String,
        user: String,
        rpID: String,
        userHandle: String,
        passkeys: [(id: String, created: Date, lastUsed: Date?)],
        hasPassword: Bool
    ) -> HTML {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        let rows = passkeys.map { passkey in
            HTML(
                """
                <li class="passkey" data-credential="\(passkey.id)">Passkey <code>\(String(passkey.id.prefix(10)))…</code>, added \(formatter.string(from: passkey.created))\(passkey.lastUsed.map { ", last used " + formatter.string(from: $0) } ?? "")
                <form method="post" action="/account/passkeys/remove">\(csrfField(csrf))<input type="hidden" name="credential" value="\(passkey.id)"><button type="submit" class="secondary">Remove</button></form></li>
                """
            )
        }
        return page(
            "Passkeys",
            """
            <p>Passkeys of <strong id="user">\(user)</strong>: sign in without a password.</p>
            \(passkeys.isEmpty ? HTML("<p id=\"none\">No passkeys yet.</p>") : HTML("<ul id=\"passkey-list\">\(rows.joined())</ul>"))
            \(hasPassword ? HTML("") : HTML("<p id=\"passwordless\">This account has no password: it signs in with its passkeys.</p>"))
            <p><button id="add-passkey" type="button">Add a passkey</button></p>
            <p id="passkey-status" role="status"></p>
            <p><a href="/account">Back to your account</a></p>
            <div id="passkey-config" data-csrf="\(csrf)" data-rp-id="\(rpID)" data-user-id="\(userHandle)" data-user-name="\(user)" data-accepted="\(passkeys.map(\.id).joined(separator: ","))" hidden></div>
            <script src="/assets/shiny-passkeys.js"></script>
            """
        )
    }

    static func changePassword(csrf: String, message: String? = nil) -> HTML {
        page(
            "Change your password",
            """
            \(message.map { HTML("<p id=\"message\">\($0)</p>") } ?? "")
            <form method="post" action="/account/password">
            \(csrfField(csrf))
            <label for="user">User name</label><input id="user" name="user" autocomplete="username">
            <label for="current">Current password</label><input id="current" name="current" type="password" autocomplete="current-password">
            <label for="new">New password</label><input id="new" name="new" type="password" autocomplete="new-password">
            <label for="code">Authenticator code (if you use one)</label><input id="code" name="code" inputmode="numeric" autocomplete="one-time-code">
            <button type="submit">Change password</button>
            </form>
            """
        )
    }

    static func stepUp(id: String, user: String, csrf: String, error: String? = nil) -> HTML {
        page(
            "Confirm the password change",
            """
            <p>Keyhaven asked to give <strong id="user">\(user)</strong> a new, strong password.
            Enter the 6-digit code from your authenticator to confirm.</p>
            \(error.map { HTML("<p class=\"error\" id=\"error\">\($0)</p>") } ?? "")
            <form method="post" action="/account-modification/step-up/\(id)">
            \(csrfField(csrf))
            <label for="code">Authenticator code</label>
            <input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" autofocus required>
            <button id="verify" type="submit">Confirm</button>
            </form>
            <form method="post" action="/account-modification/step-up/\(id)/cancel">
            \(csrfField(csrf))
            <button id="cancel" type="submit" class="secondary">Cancel</button>
            </form>
            """
        )
    }

    static func stepUpDone(_ message: String, success: Bool) -> HTML {
        page(
            success ? "Password changed" : "Not changed",
            "<p id=\"result\" class=\"\(success ? "ok" : "error")\">\(message)</p><p>You can return to Keyhaven.</p>"
        )
    }

    static func notFound() -> HTML {
        page("Not found", "<p id=\"result\">This page does not exist (or the request has ended).</p>")
    }
}
