/// shiny's HTML: plain pages, no scripts; element ids are stable (browser tests use them).
enum ShinyPages {
    static func escape(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#x27;"
            default: result.append(character)
            }
        }
        return result
    }

    static func page(_ title: String, _ body: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
        <title>\(escape(title)) · shiny</title>
        <style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}
        label{display:block;margin:.8rem 0 .2rem}input{font-size:1rem;padding:.4rem;width:100%;box-sizing:border-box}
        button{margin-top:1rem;font-size:1rem;padding:.5rem 1rem}.error{color:#b00020}.ok{color:#00703c}</style>
        </head><body><h1>\(escape(title))</h1>
        \(body)
        </body></html>
        """
    }

    static func home() -> String {
        page(
            "shiny",
            """
            <p>An example service that lets Keyhaven upgrade its accounts.</p>
            <p><a id="signup" href="/signup">Create an account</a> · <a id="signin" href="/signin">Sign in</a></p>
            """
        )
    }

    static func signUp(error: String? = nil) -> String {
        page(
            "Create an account",
            """
            \(error.map { "<p class=\"error\" id=\"error\">\(escape($0))</p>" } ?? "")
            <form method="post" action="/signup">
            <label for="user">User name</label><input id="user" name="user" autocomplete="username" required>
            <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="new-password" required>
            <label><input type="checkbox" name="totp" value="1" style="width:auto"> Protect with an authenticator code (TOTP)</label>
            <button id="create" type="submit">Create account</button>
            </form>
            """
        )
    }

    static func signIn(error: String? = nil, askCode: Bool = false, user: String = "") -> String {
        page(
            "Sign in",
            """
            \(error.map { "<p class=\"error\" id=\"error\">\(escape($0))</p>" } ?? "")
            <form method="post" action="/signin">
            <label for="user">User name</label><input id="user" name="user" value="\(escape(user))" autocomplete="username" required>
            <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
            \(askCode ? "<label for=\"code\">Authenticator code</label><input id=\"code\" name=\"code\" inputmode=\"numeric\" autocomplete=\"one-time-code\">" : "")
            <button id="submit" type="submit">Sign in</button>
            </form>
            <p><a href="/signin/keyhaven" id="sign-in-with-keyhaven">Sign in with Keyhaven</a></p>
            """
        )
    }

    static func account(user: String, totp: String?, linked: Bool) -> String {
        page(
            "Your account",
            """
            <p id="welcome">Signed in as <strong>\(escape(user))</strong>.</p>
            \(totp.map { "<p>Authenticator secret: <code id=\"totp-secret\">\(escape($0))</code></p>" } ?? "")
            \(linked ? "<p id=\"linked\">This account signs in with Keyhaven.</p>" : "<p><a href=\"/account/password\">Change your password</a></p>")
            """
        )
    }

    static func changePassword(message: String? = nil) -> String {
        page(
            "Change your password",
            """
            \(message.map { "<p id=\"message\">\(escape($0))</p>" } ?? "")
            <form method="post" action="/account/password">
            <label for="user">User name</label><input id="user" name="user" autocomplete="username">
            <label for="current">Current password</label><input id="current" name="current" type="password" autocomplete="current-password">
            <label for="new">New password</label><input id="new" name="new" type="password" autocomplete="new-password">
            <label for="code">Authenticator code (if you use one)</label><input id="code" name="code" inputmode="numeric" autocomplete="one-time-code">
            <button type="submit">Change password</button>
            </form>
            """
        )
    }

    static func stepUp(id: String, user: String, error: String? = nil) -> String {
        page(
            "Confirm the password change",
            """
            <p>Keyhaven asked to give <strong id="user">\(escape(user))</strong> a new, strong password.
            Enter the 6-digit code from your authenticator to confirm.</p>
            \(error.map { "<p class=\"error\" id=\"error\">\(escape($0))</p>" } ?? "")
            <form method="post" action="/account-modification/step-up/\(escape(id))">
            <label for="code">Authenticator code</label>
            <input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" autofocus required>
            <button id="verify" type="submit">Confirm</button>
            </form>
            <form method="post" action="/account-modification/step-up/\(escape(id))/cancel">
            <button id="cancel" type="submit">Cancel</button>
            </form>
            """
        )
    }

    static func stepUpDone(_ message: String, success: Bool) -> String {
        page(
            success ? "Password changed" : "Not changed",
            "<p id=\"result\" class=\"\(success ? "ok" : "error")\">\(escape(message))</p><p>You can return to Keyhaven.</p>"
        )
    }

    static func notFound() -> String {
        page("Not found", "<p id=\"result\">This page does not exist (or the request has ended).</p>")
    }
}
