import AutoFill
import Foundation
import Vault
import _KeyhavenSupport

/// An import read and previewed, waiting for the person's confirmation (kept in memory only).
struct ImportPreview: Sendable {
    var parsed: ParsedImport
    var report: ImportReport
    var fileName: String
    var created: Date
}

extension WebAppPages {
    // MARK: Generator

    struct Generated {
        var password: String?
        var error: String?
        var rulesText: String
        var domain: String
        var length: String
        var source: String
        var score: Int?
        var warning: String
        var suggestions: [String]
    }

    static func generator(_ generated: Generated, session: Session) -> HTML {
        """
        \(page("Generator", section: .generator, session: session, """
        <form method="get" action="\(session.path("/generator"))" class="card" id="generator-form">
        <label for="length">Length</label>
        <input id="length" name="length" type="number" min="8" max="100" value="\(generated.length)" placeholder="Apple's format: 20 characters">
        <p class="field-hint">Leave empty for Apple's format (xxxxxx-xxxxxx-xxxxxx).</p>
        <label for="rules">Password rules</label>
        <input id="rules" name="rules" value="\(generated.rulesText)" placeholder="required: lower; required: upper; required: digit; minlength: 12;" spellcheck="false">
        <p class="field-hint">Apple's password-rules language, as in a site's <code>passwordrules</code> attribute.</p>
        <label for="domain">…or look the rules up by site</label>
        <input id="domain" name="domain" value="\(generated.domain)" placeholder="example.com" spellcheck="false">
        <div class="actions"><button type="submit" id="generate">Generate</button></div>
        </form>
        <section class="card" aria-labelledby="h-generated" aria-live="polite"><h2 id="h-generated">Password</h2>
        \(generated.error.map { HTML("<p class=\"notice error\" id=\"generator-error\">\($0)</p>") } ?? "")
        \(generated.password.map { password in HTML("""
        <p class="secret" id="generated">\(password)</p>
        <p>\(meter(generated.score, id: "generated-strength")) \(generated.score.map { StrengthWords.all[$0] } ?? "") · <span class="muted" id="rules-source">rules: \(generated.source)</span></p>
        <div class="actions"><button type="button" class="secondary" id="copy-generated" data-copy-text="generated">Copy</button></div>
        """) } ?? "")
        </section>
        <section class="card" aria-labelledby="h-check"><h2 id="h-check">How strong is a password?</h2>
        <label for="check-password">Password to check</label>
        <input id="check-password" type="password" autocomplete="off" data-strength-input>
        <p aria-live="polite"><span class="meter" id="check-strength" data-score="-1" role="img" aria-label="Strength"><span></span><span></span><span></span><span></span><span></span></span> <span id="check-words" class="muted">Type to see its zxcvbn score; nothing is stored.</span></p>
        <p id="check-feedback" class="muted"></p>
        </section>
        """))
        """
    }

    // MARK: Import and export

    static func transfer(session: Session, flash: WebApp.Flash?, error: String? = nil) -> HTML {
        let formats = ImportFormat.allCases.map { HTML("<option value=\"\($0.rawValue)\">\($0.rawValue)</option>") }
        let exports = ExportFormat.allCases.map { HTML("<option value=\"\($0.rawValue)\">\($0.rawValue)</option>") }
        return page(
            "Import & export",
            section: .transfer,
            session: session,
            flash: flash,
            """
            \(error.map { HTML("<p class=\"notice error\" id=\"import-error\" role=\"alert\">\($0)</p>") } ?? "")
            <form method="post" action="\(session.path("/import"))" enctype="multipart/form-data" class="card" aria-labelledby="h-import">
            <h2 id="h-import">Import</h2>
            <p class="muted">An export of Chrome, Firefox, Apple Passwords, Bitwarden, 1Password, KeePassXC, LastPass or a FIDO CXF file. You see what would change before anything is written.</p>
            \(csrfField(session.csrf))
            <label for="import-file">File</label>
            <input id="import-file" name="file" type="file" required>
            <label for="import-format">Format</label>
            <select id="import-format" name="format"><option value="">Detect automatically</option>\(formats.joined())</select>
            <div class="actions"><button type="submit" id="preview-import">Preview</button></div>
            </form>
            <form method="post" action="\(session.path("/export"))" class="card" aria-labelledby="h-export">
            <h2 id="h-export">Export</h2>
            \(csrfField(session.csrf))
            <label for="export-format">Format</label>
            <select id="export-format" name="format">\(exports.joined())</select>
            <label class="check"><input type="checkbox" id="export-understood" name="understood" value="1" required> I understand the file holds my passwords unencrypted.</label>
            <div class="actions"><button type="submit" id="export">Export</button></div>
            </form>
            """
        )
    }

    static func importPreview(id: String, _ preview: ImportPreview, session: Session) -> HTML {
        let items = preview.parsed.items.prefix(200).map { item -> HTML in
            let site = item.content.services.first?.identifier ?? ""
            return
                "<li><span><span class=\"primary\">\(item.content.displayTitle)</span> <span class=\"muted\">\(item.content.user)\(site.isEmpty ? "" : " · \(site)")</span></span></li>"
        }
        let problems = (preview.report.skipped + preview.report.warnings).prefix(50).map {
            HTML("<li>\($0.description)</li>")
        }
        return page(
            "Import preview",
            section: .transfer,
            session: session,
            """
            <section class="card" id="preview">
            <p>\(preview.fileName): \(preview.report.format.rawValue).</p>
            <ul>
            <li><strong id="preview-new">\(preview.report.imported)</strong> new credentials would be added</li>
            <li><strong id="preview-duplicates">\(preview.report.duplicatesMerged)</strong> already in the vault (or twice in the file) and left alone</li>
            \(preview.report.passkeys > 0 ? HTML("<li><strong id=\"preview-passkeys\">\(preview.report.passkeys)</strong> passkeys would be added</li>") : "")
            <li><strong id="preview-skipped">\(preview.report.skipped.count)</strong> items skipped, <strong>\(preview.report.warnings.count)</strong> imported in part</li>
            </ul>
            \(problems.isEmpty ? "" : HTML("<h2>Problems</h2><ul id=\"preview-problems\">\(problems.joined())</ul>"))
            <div class="actions">
            \(button("Import \(preview.report.imported) credentials", action: "/import/\(id)/confirm", session: session, id: "confirm-import", style: ""))
            \(button("Cancel", action: "/import/\(id)/cancel", session: session, id: "cancel-import"))
            </div></section>
            <h2>In the file</h2>
            <ul class="list" id="preview-items">\(items.joined())</ul>
            """
        )
    }

    // MARK: Pairing

    static func pairing(
        pairings: [AutoFillAgent.Pairing],
        code: (code: String, name: String)?,
        session: Session,
        flash: WebApp.Flash?
    )
        -> HTML
    {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        let rows = pairings.map { pairing -> HTML in
            """
            <tr><td>\(pairing.name)</td><td>\(pairing.browser)</td><td>\(formatter.string(from: pairing.created))</td><td>\(pairing.lastUsed.map { formatter.string(from: $0) } ?? "—")</td>
            <td>\(button("Revoke", action: "/pairing/\(pairing.id)/revoke", session: session, id: "revoke-\(pairing.id)", style: "danger"))</td></tr>
            """
        }
        return page(
            "Browsers",
            section: .pairing,
            session: session,
            flash: flash,
            """
            <section class="card" aria-labelledby="h-pair"><h2 id="h-pair">Pair a browser</h2>
            <p>Install Keyhaven's extension (<code>keyhaven browser install</code>) and click <strong>Pair</strong> in it. Its 6-digit code appears here; type it into the extension.</p>
            <div id="pairing" aria-live="polite">\(code.map { HTML("<p class=\"pairing-code\" id=\"pairing-code\">\($0.code)</p><p class=\"muted\" id=\"pairing-client\">for \($0.name)</p>") } ?? HTML("<p class=\"muted\" id=\"pairing-waiting\">Waiting for a browser to ask…</p>"))</div>
            <noscript><p><a href="\(session.path("/pairing"))">Reload</a> after clicking Pair.</p></noscript>
            </section>
            <section class="card" aria-labelledby="h-paired"><h2 id="h-paired">Paired browsers</h2>
            \(rows.isEmpty ? HTML("<p class=\"muted\" id=\"no-pairings\">None yet.</p>") : HTML("<table id=\"pairings\"><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Browser</th><th scope=\"col\">Paired</th><th scope=\"col\">Last used</th><th scope=\"col\"><span class=\"visually-hidden\">Actions</span></th></tr></thead><tbody>\(rows.joined())</tbody></table>"))
            </section>
            """
        )
    }

    // MARK: Settings

    static func settings(
        _ settings: WebSettings,
        idleLockMinutes: Int,
        session: Session,
        flash: WebApp.Flash?,
        error: String? = nil
    )
        -> HTML
    {
        let sources = WebSettings.BreachSource.allCases.map { source -> HTML in
            "<label class=\"check\"><input type=\"radio\" name=\"breachSource\" id=\"breach-source-\(source.rawValue)\" value=\"\(source.rawValue)\"\(source == settings.breachSource ? HTML(" checked") : "")> \(source.title)</label>"
        }
        return page(
            "Settings",
            section: .settings,
            session: session,
            flash: flash,
            """
            \(error.map { HTML("<p class=\"notice error\" id=\"settings-error\" role=\"alert\">\($0)</p>") } ?? "")
            <form method="post" action="\(session.path("/settings"))" class="card">
            \(csrfField(session.csrf))
            <label for="idle-lock">Lock after this many idle minutes</label>
            <input id="idle-lock" name="idleLockMinutes" type="number" min="0" max="1440" value="\(idleLockMinutes)">
            <p class="field-hint">0 never locks. The agent and every browser lock together.</p>
            <fieldset><legend>Breach check</legend>\(sources.joined())
            <label for="breach-index-path">Offline index</label>
            <input id="breach-index-path" name="breachIndexPath" value="\(settings.breachIndexPath)" placeholder="/path/to/pwned.khbi" spellcheck="false">
            <label for="breach-api">Range API</label>
            <input id="breach-api" name="breachAPI" value="\(settings.breachAPI)" spellcheck="false">
            </fieldset>
            <label class="check"><input type="checkbox" id="contact-services" name="contactServices" value="1"\(settings.contactServices ? HTML(" checked") : "")> Ask websites for their change-password page and one-tap upgrade support</label>
            <div class="actions"><button type="submit" id="save-settings">Save</button></div>
            </form>
            """
        )
    }
}
