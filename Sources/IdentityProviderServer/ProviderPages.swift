import IdentityProvider
import _KeyhavenSupport
import _KeyhavenWeb

/// The provider's own pages: sign-in, consent, the `form_post` hand-off, the account page. Plain
/// HTML forms with stable element ids (the browser tests drive them), no inline script: the
/// hand-off's auto-submit is `/auth/handoff.js` (`Resources/handoff.js`, served with the style sheet
/// as `_KeyhavenWeb` assets).
enum ProviderPages {
    /// A page in Keyhaven's one look (``DesignSystem``: the style sheet served at its path).
    static func page(_ title: String, _ body: HTML) -> HTML {
        DesignSystem.sheet(title: title, brand: "Keyhaven", body: body)
    }

    static func hidden(_ fields: [(String, String)]) -> HTML {
        fields.map { HTML.hiddenField($0.0, $0.1) }.joined(separator: "\n")
    }

    static func signIn(
        action: String,
        serviceName: String?,
        fields: [(String, String)],
        loginToken: String,
        email: String = "",
        error: String? = nil,
        askCode: Bool = false
    ) -> HTML {
        let intro: HTML =
            serviceName.map { "<p>Sign in to use Sign in with Keyhaven with <strong>\($0)</strong>.</p>" }
            ?? "<p>Sign in to your Keyhaven account.</p>"
        let code: HTML =
            askCode
            ? #"<label for="code">One-time code</label><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" autofocus>"#
            : ""
        return page(
            "Sign in with Keyhaven",
            """
            \(intro)
            \(error.map { HTML(#"<p class="error" id="error">\#($0)</p>"#) } ?? "")
            <form method="post" action="\(action)" id="signin">
            \(hidden(fields))
            <input type="hidden" name="login_token" value="\(loginToken)">
            <label for="email">E-mail</label><input id="email" name="email" type="email" value="\(email)" autocomplete="username" required>
            <label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
            \(code)
            <button type="submit" name="action" value="signin" id="submit">Continue</button>
            <button type="submit" name="action" value="cancel" id="cancel" class="secondary" formnovalidate>Cancel</button>
            </form>
            """
        )
    }

    static func consent(_ prompt: ConsentPrompt, fields: [(String, String)], formToken: String) -> HTML {
        let emailChoice: HTML =
            prompt.asksEmail
            ? """
            <fieldset><legend>E-mail</legend>
            <label><input type="radio" name="share_email" value="share" id="share" checked> Share my e-mail (\(prompt.email))</label>
            <label><input type="radio" name="share_email" value="hide" id="hide"> Hide my e-mail (the service gets a private relay address that forwards to you)</label>
            </fieldset>
            """
            : ""
        let name: HTML =
            prompt.asksName
            ? "<p>Your name (\(prompt.name ?? "not set")) is shared this first time only.</p>" : ""
        return page(
            "Sign in with Keyhaven",
            """
            <p>Create an account for <strong>\(prompt.serviceName)</strong> using your Keyhaven account?</p>
            \(name)
            <form method="post" action="/auth/authorize/consent" id="consent">
            \(hidden(fields + [("form_token", formToken)]))
            \(emailChoice)
            <button type="submit" name="action" value="continue" id="continue">Continue</button>
            <button type="submit" name="action" value="cancel" id="cancel" class="secondary">Cancel</button>
            </form>
            """
        )
    }

    /// The hand-off Apple makes: a form that posts the response to the service's redirect URI.
    static func formPost(to redirectURI: String, fields: [(String, String)]) -> HTML {
        page(
            "Returning to the service",
            """
            <form method="post" action="\(redirectURI)" id="handoff">
            \(hidden(fields))
            <noscript><button type="submit">Continue</button></noscript>
            </form>
            <script src="/auth/handoff.js"></script>
            """
        )
    }

    static func account(email: String, services: [ConnectedService], formToken: String, message: String?) -> HTML {
        let rows = services.map { service -> HTML in
            let token: HTML =
                #"<input type="hidden" name="form_token" value="\#(formToken)"><input type="hidden" name="client_id" value="\#(service.clientId)">"#
            var actions: [HTML] = []
            if service.state == .authorized {
                actions.append(
                    #"<form method="post" action="/account/services/stop">\#(token)<button id="stop-\#(service.clientId)">Stop using Sign in with Keyhaven</button></form>"#
                )
                if service.hidesEmail {
                    let next = service.relayForwarding ? "off" : "on"
                    actions.append(
                        #"<form method="post" action="/account/services/relay">\#(token)<input type="hidden" name="enabled" value="\#(next == "on" ? "1" : "0")"><button id="relay-\#(service.clientId)">Turn forwarding \#(next)</button></form>"#
                    )
                }
            }
            let email: HTML = service.email.map { " — sees \($0)" } ?? ""
            let forwarding =
                service.hidesEmail ? (service.relayForwarding ? " (forwarding on)" : " (forwarding off)") : ""
            return HTML(
                #"<li id="service-\#(service.clientId)"><strong>\#(service.name)</strong> (\#(service.state.rawValue))\#(email)\#(forwarding)\#(actions.joined())</li>"#
            )
        }
        return page(
            "Your Keyhaven account",
            """
            <p>Signed in as <strong id="account-email">\(email)</strong>.</p>
            \(message.map { HTML(#"<p class="note" id="message">\#($0)</p>"#) } ?? "")
            <h2>Apps using Sign in with Keyhaven</h2>
            <ul id="services">\(rows.isEmpty ? "<li>None yet.</li>" : rows.joined(separator: "\n"))</ul>
            <h2>Delete your account</h2>
            <form method="post" action="/account/delete" id="delete">
            <input type="hidden" name="form_token" value="\(formToken)">
            <label><input type="checkbox" name="confirm" value="yes" id="confirm-delete" required> I understand every service is told and my data goes.</label>
            <button id="delete-account" class="danger">Delete my account</button>
            </form>
            <form method="post" action="/account/signout"><input type="hidden" name="form_token" value="\(formToken)"><button id="signout" class="secondary">Sign out</button></form>
            """
        )
    }

    static func message(_ title: String, _ text: String) -> HTML {
        page(title, #"<p id="message">\#(text)</p>"#)
    }
}
