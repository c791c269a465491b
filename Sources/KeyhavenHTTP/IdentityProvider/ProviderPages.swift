import IdentityProvider

/// The provider's own pages: sign-in, consent, the `form_post` hand-off, the account page. Plain
/// HTML forms with stable element ids (the browser tests drive them), no script except the
/// hand-off's auto-submit.
enum ProviderPages {
    static func escape(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }

    static func page(_ title: String, _ body: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
        <title>\(escape(title))</title>
        <style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}
        label{display:block;margin:.8rem 0 .2rem}input[type=email],input[type=password],input[type=text]{width:100%;padding:.4rem}
        button{margin:.8rem .4rem 0 0;padding:.4rem 1rem}.error{color:#b00020}.note{color:#555}</style>
        </head><body><h1>\(escape(title))</h1>
        \(body)
        </body></html>
        """
    }

    static func hidden(_ fields: [(String, String)]) -> String {
        fields.map { #"<input type="hidden" name="\#(escape($0.0))" value="\#(escape($0.1))">"# }.joined(
            separator: "\n"
        )
    }

    static func signIn(
        action: String,
        serviceName: String?,
        fields: [(String, String)],
        email: String = "",
        error: String? = nil,
        askCode: Bool = false
    ) -> String {
        let intro =
            serviceName.map { "<p>Sign in to use Sign in with Keyhaven with <strong>\(escape($0))</strong>.</p>" }
            ?? "<p>Sign in to your Keyhaven account.</p>"
        let code =
            askCode
            ? #"<label for="code">One-time code</label><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" autofocus>"#
            : ""
        return page(
            "Sign in with Keyhaven",
            """
            \(intro)
            \(error.map { #"<p class="error" id="error">\#(escape($0))</p>"# } ?? "")
            <form method="post" action="\(escape(action))" id="signin">
            \(hidden(fields))
            <label for="email">E-mail</label><input id="email" name="email" type="email" value="\(escape(email))" autocomplete="username" required>
            <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
            \(code)
            <button type="submit" name="action" value="signin" id="submit">Continue</button>
            <button type="submit" name="action" value="cancel" id="cancel" formnovalidate>Cancel</button>
            </form>
            """
        )
    }

    static func consent(_ prompt: ConsentPrompt, fields: [(String, String)], formToken: String) -> String {
        let emailChoice =
            prompt.asksEmail
            ? """
            <fieldset><legend>E-mail</legend>
            <label><input type="radio" name="share_email" value="share" id="share" checked> Share my e-mail (\(escape(prompt.email)))</label>
            <label><input type="radio" name="share_email" value="hide" id="hide"> Hide my e-mail (the service gets a private relay address that forwards to you)</label>
            </fieldset>
            """
            : ""
        let name =
            prompt.asksName
            ? "<p>Your name (\(escape(prompt.name ?? "not set"))) is shared this first time only.</p>" : ""
        return page(
            "Sign in with Keyhaven",
            """
            <p>Create an account for <strong>\(escape(prompt.serviceName))</strong> using your Keyhaven account?</p>
            \(name)
            <form method="post" action="/auth/authorize/consent" id="consent">
            \(hidden(fields + [("form_token", formToken)]))
            \(emailChoice)
            <button type="submit" name="action" value="continue" id="continue">Continue</button>
            <button type="submit" name="action" value="cancel" id="cancel">Cancel</button>
            </form>
            """
        )
    }

    /// The hand-off Apple makes: a form that posts the response to the service's redirect URI.
    static func formPost(to redirectURI: String, fields: [(String, String)]) -> String {
        page(
            "Returning to the service",
            """
            <form method="post" action="\(escape(redirectURI))" id="handoff">
            \(hidden(fields))
            <noscript><button type="submit">Continue</button></noscript>
            </form>
            <script>document.getElementById("handoff").submit()</script>
            """
        )
    }

    static func account(email: String, services: [ConnectedService], formToken: String, message: String?) -> String {
        let rows = services.map { service -> String in
            let token =
                #"<input type="hidden" name="form_token" value="\#(escape(formToken))"><input type="hidden" name="client_id" value="\#(escape(service.clientId))">"#
            var actions = ""
            if service.state == .authorized {
                actions +=
                    #"<form method="post" action="/account/services/stop">\#(token)<button id="stop-\#(escape(service.clientId))">Stop using Sign in with Keyhaven</button></form>"#
                if service.hidesEmail {
                    let next = service.relayForwarding ? "off" : "on"
                    actions +=
                        #"<form method="post" action="/account/services/relay">\#(token)<input type="hidden" name="enabled" value="\#(next == "on" ? "1" : "0")"><button id="relay-\#(escape(service.clientId))">Turn forwarding \#(next)</button></form>"#
                }
            }
            let email = service.email.map { " — sees \(escape($0))" } ?? ""
            let forwarding =
                service.hidesEmail ? (service.relayForwarding ? " (forwarding on)" : " (forwarding off)") : ""
            return
                #"<li id="service-\#(escape(service.clientId))"><strong>\#(escape(service.name))</strong> (\#(service.state.rawValue))\#(email)\#(forwarding)\#(actions)</li>"#
        }
        return page(
            "Your Keyhaven account",
            """
            <p>Signed in as <strong id="account-email">\(escape(email))</strong>.</p>
            \(message.map { #"<p class="note" id="message">\#(escape($0))</p>"# } ?? "")
            <h2>Apps using Sign in with Keyhaven</h2>
            <ul id="services">\(rows.isEmpty ? "<li>None yet.</li>" : rows.joined(separator: "\n"))</ul>
            <h2>Delete your account</h2>
            <form method="post" action="/account/delete" id="delete">
            <input type="hidden" name="form_token" value="\(escape(formToken))">
            <label><input type="checkbox" name="confirm" value="yes" id="confirm-delete" required> I understand every service is told and my data goes.</label>
            <button id="delete-account">Delete my account</button>
            </form>
            <form method="post" action="/account/signout"><input type="hidden" name="form_token" value="\(escape(formToken))"><button id="signout">Sign out</button></form>
            """
        )
    }

    static func message(_ title: String, _ text: String) -> String {
        page(title, #"<p id="message">\#(escape(text))</p>"#)
    }
}
