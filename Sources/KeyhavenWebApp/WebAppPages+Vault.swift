import Foundation
import Passkeys
import SecurityRecommendations
import Vault
import _KeyhavenSupport

/// A credential as the vault list shows it (and `/api/items` returns it).
struct VaultRow: Encodable, Sendable {
    var id: String
    var title: String
    var user: String
    var site: String
    var badges: [String]
    var strengthScore: Int?

    init(_ credential: Credential, audit: AuditItem?, passkeys: [PasskeyFacts] = []) {
        id = credential.id.rawValue
        title = credential.content.displayTitle
        user = credential.user
        site = credential.primaryDomain ?? ""
        var badges = (audit?.issues ?? []).filter { $0 != .unsecured }.map(\.rawValue)
        if credential.totp != nil { badges.append("otp") }
        if !PasskeyFacts.matching(credential, passkeys).isEmpty { badges.append("passkey") }
        if credential.signIn != nil { badges.append("sign-in") }
        self.badges = badges
        strengthScore = audit?.strengthScore
    }
}

/// What the app shows of a passkey: never its private key (the cache holds these, not the passkeys).
struct PasskeyFacts: Sendable, Hashable {
    var rpID: String
    var userName: String
    var created: Date
    /// The credential id's first characters (base64url).
    var shortCredentialID: String

    init(_ passkey: PasskeyCredential) {
        rpID = passkey.rpID
        userName = passkey.userName
        created = passkey.created
        shortCredentialID = String(Base64URL.encode(passkey.credentialID).prefix(10))
    }

    /// The passkeys of a credential's account, by the vault's one rule
    /// (``PasskeyCredential/belongs(rpID:userName:to:)``: same site or a parent, same user).
    static func matching(_ credential: Credential, _ passkeys: [PasskeyFacts]) -> [PasskeyFacts] {
        passkeys.filter { PasskeyCredential.belongs(rpID: $0.rpID, userName: $0.userName, to: credential) }
    }
}

extension WebAppPages {
    static let badgeWords: [String: String] = [
        "breached": "Breached", "reused": "Reused", "weak": "Weak", "otp": "One-time code", "passkey": "Passkey",
        "sign-in": "Sign in with Keyhaven",
    ]

    static func badges(_ names: [String]) -> HTML {
        guard !names.isEmpty else { return "" }
        return
            "<span class=\"badges\">\(names.map { HTML("<span class=\"badge \($0)\">\(badgeWords[$0] ?? $0)</span>") }.joined())</span>"
    }

    static func row(_ row: VaultRow, session: Session) -> HTML {
        """
        <li data-id="\(row.id)"><a class="row-link" href="\(session.path("/items/\(row.id)"))"><span class="primary">\(row.title)</span><br><span class="muted">\(row.user.isEmpty ? "(no user name)" : row.user)\(row.site.isEmpty || row.site == row.title ? "" : " · \(row.site)")</span></a>
        <span class="row-facts">\(badges(row.badges))\(meter(row.strengthScore))</span></li>
        """
    }

    static func vault(
        rows: [VaultRow],
        total: Int,
        matched: Int,
        query: String,
        status: HTML = "",
        session: Session,
        flash: WebApp.Flash?
    )
        -> HTML
    {
        page(
            "Passwords",
            section: .vault,
            session: session,
            flash: flash,
            """
            \(status)
            <form method="get" action="\(session.path("/vault"))" role="search" class="card">
            <label for="search">Search passwords</label>
            <input id="search" name="q" type="search" value="\(query)" placeholder="Site, user name, notes…" autocomplete="off">
            <noscript><button type="submit">Search</button></noscript>
            </form>
            <p class="muted" id="result-count" aria-live="polite">\(countWords(shown: rows.count, matched: matched, total: total))</p>
            <ul class="list" id="vault-list">\(rows.map { row($0, session: session) }.joined())</ul>
            """
        )
    }

    static func countWords(shown: Int, matched: Int, total: Int) -> String {
        if matched == total {
            return shown == total
                ? "\(total) passwords" : "\(total) passwords; the first \(shown) shown — search to find the others"
        }
        return shown == matched
            ? "\(matched) of \(total) passwords match" : "\(matched) of \(total) match; the first \(shown) shown"
    }

    struct ItemFacts {
        var credential: Credential
        var audit: AuditItem?
        var history: [PasswordHistoryEntry]
        var journal: [UpgradeJournalEntry]
        var runs: [UpgradeRun.Snapshot]
        var passkeys: [PasskeyFacts] = []
    }

    static func item(_ facts: ItemFacts, session: Session, flash: WebApp.Flash?) -> HTML {
        let credential = facts.credential
        let id = credential.id.rawValue
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [
            .withFullDate, .withTime, .withColonSeparatorInTime, .withDashSeparatorInDate, .withSpaceBetweenDateAndTime,
        ]
        let websites = credential.services.map { service -> HTML in
            guard let origin = ServiceOrigin(service: service.identifier) else {
                return
                    "<li><code>\(service.identifier)</code> <span class=\"muted\">— an app, not a website</span></li>"
            }
            let domain = origin.registrableDomain ?? origin.host
            return """
                <li><code>\(origin.serialized)</code><br><span class="muted">Exact match on \(origin.serialized); other pages of \(domain) are offered after you choose the account\(origin.scheme == .http ? HTML(" · <strong>not secured (http)</strong>") : "").</span></li>
                """
        }
        let history = facts.history.reversed().enumerated().map { index, entry -> HTML in
            let position = facts.history.count - 1 - index
            return """
                <tr><td>\(formatter.string(from: entry.replaced))</td><td><span class="secret" id="history-\(position)">••••••••••</span></td>
                <td><button type="button" class="link" data-reveal="\(id)" data-history="\(position)" data-target="history-\(position)">Reveal</button></td></tr>
                """
        }
        let pending = facts.journal.map { entry -> HTML in
            "<li>Upgrade on \(entry.service) started \(formatter.string(from: entry.started)) — not confirmed yet; the next upgrade asks the service again.</li>"
        }
        let running = facts.runs.map { run -> HTML in
            "<li><a href=\"\(session.path("/upgrades/\(run.id)"))\">Upgrade on \(run.service) in progress</a></li>"
        }
        let upgradeAvailable = facts.audit?.actions.upgrade?.strongPassword == true
        let passkeyAvailable = facts.audit?.actions.upgrade?.passkey == true && credential.password != nil
        return page(
            credential.content.displayTitle,
            section: .vault,
            session: session,
            flash: flash,
            """
            <section class="card" aria-labelledby="h-account"><h2 id="h-account" class="visually-hidden">Account</h2>
            <dl class="facts">
            <dt>User name</dt><dd id="user">\(credential.user.isEmpty ? "(none)" : credential.user)</dd>
            <dt>Password</dt><dd>\(credential.password == nil ? HTML("<span id=\"password\">No password: this account signs in with \(facts.passkeys.isEmpty ? "Keyhaven" : "its passkey").</span>") : HTML("""
            <span class="secret" id="password">••••••••••••</span>
            <span class="actions"><button type="button" class="secondary" id="reveal" data-reveal="\(id)" data-target="password">Reveal</button>
            <button type="button" class="secondary" id="copy" data-copy="\(id)">Copy</button></span>
            """))</dd>
            <dt>Strength</dt><dd>\(meter(facts.audit?.strengthScore, id: "strength")) \(facts.audit?.strengthScore.map { StrengthWords.all[max(0, min(4, $0))] } ?? "—")</dd>
            \(facts.audit.map { audit in audit.issues.isEmpty ? HTML("<dt>Issues</dt><dd id=\"issues\">None known</dd>") : HTML("<dt>Issues</dt><dd id=\"issues\">\(badges(audit.issues.filter { $0 != .unsecured }.map(\.rawValue))) \(recommendationReason(audit))</dd>") } ?? "")
            \(credential.totp != nil ? HTML("<dt>One-time code</dt><dd><span class=\"otp-code\" id=\"otp\" data-otp=\"\(id)\">······</span> <span class=\"muted\" id=\"otp-remaining\"></span></dd>") : "")
            \(credential.folder.map { HTML("<dt>Folder</dt><dd>\($0)</dd>") } ?? "")
            \(credential.notes.isEmpty ? "" : HTML("<dt>Notes</dt><dd>\(credential.notes)</dd>"))
            <dt>Modified</dt><dd>\(formatter.string(from: credential.modified))</dd>
            </dl>
            \(upgradeAvailable || passkeyAvailable ? HTML("<div class=\"actions\">\(passkeyAvailable ? button("Upgrade to a passkey", action: "/items/\(id)/upgrade-to-passkey", session: session, id: "upgrade-passkey", style: "") : "")\(upgradeAvailable ? button("Upgrade to a strong password", action: "/items/\(id)/upgrade", session: session, id: "upgrade", style: passkeyAvailable ? "secondary" : "") : "")</div>") : "")
            </section>
            <section class="card" aria-labelledby="h-websites"><h2 id="h-websites">Websites</h2>
            <ul id="websites">\(websites.joined())</ul></section>
            \(facts.passkeys.isEmpty ? "" : HTML("""
            <section class="card" aria-labelledby="h-passkeys"><h2 id="h-passkeys">Passkeys</h2>
            <table id="passkeys"><thead><tr><th scope="col">Site (RP ID)</th><th scope="col">User</th><th scope="col">Created</th><th scope="col">Credential</th></tr></thead>
            <tbody>\(facts.passkeys.map { HTML("<tr><td>\($0.rpID)</td><td>\($0.userName)</td><td>\(formatter.string(from: $0.created))</td><td><code>\($0.shortCredentialID)…</code></td></tr>") }.joined())</tbody></table>
            </section>
            """))
            <section class="card" aria-labelledby="h-history"><h2 id="h-history">Password history</h2>
            \(history.isEmpty ? HTML("<p class=\"muted\" id=\"history-empty\">No earlier passwords.</p>") : HTML("<table id=\"history\"><thead><tr><th scope=\"col\">Replaced</th><th scope=\"col\">Password</th><th scope=\"col\"><span class=\"visually-hidden\">Actions</span></th></tr></thead><tbody>\(history.joined())</tbody></table>"))
            </section>
            <section class="card" aria-labelledby="h-upgrades"><h2 id="h-upgrades">Upgrades</h2>
            \(pending.isEmpty && running.isEmpty ? HTML("<p class=\"muted\" id=\"upgrades-none\">No upgrade is pending.</p>") : HTML("<ul id=\"upgrades\">\((running + pending).joined())</ul>"))
            </section>
            """
        )
    }
}
