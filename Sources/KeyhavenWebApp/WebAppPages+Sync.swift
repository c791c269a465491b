import Foundation
import KeyhavenApp
import Vault
import _KeyhavenSupport
import _KeyhavenWeb

/// The Sync page and the confirmation of a resolved conflict. Secret values (passwords, notes,
/// TOTP secrets) are never in a page: each shows masked with Reveal, which fetches it (CSRF header)
/// as the item page's password does.
extension WebAppPages {
    static func sync(
        _ status: SyncStatus?,
        conflicts: [SyncConflictItem],
        session: Session,
        flash: WebApp.Flash?
    ) -> HTML {
        guard let status else {
            return page(
                "Sync",
                section: .sync,
                session: session,
                flash: flash,
                "<p id=\"sync-unavailable\">Sync is not available in this Keyhaven: open the app with <code>keyhaven ui</code> while <code>keyhaven agent</code> runs.</p>"
            )
        }
        guard status.enabled else {
            return page(
                "Sync",
                section: .sync,
                session: session,
                flash: flash,
                """
                <section class="card"><p id="sync-state">Sync is <strong>off</strong> for this vault.</p>
                <p class="muted">Turn it on from the command line: <code>keyhaven sync enable --server URL</code> (the server is <code>keyhaven sync serve</code>, which stores only ciphertext).</p></section>
                """
            )
        }
        let formatter = dateFormatter
        let rows = conflicts.flatMap { item -> [HTML] in
            let several = Dictionary(grouping: item.conflicts, by: \.field).filter { $0.value.count > 1 }
            return item.conflicts.map { conflict -> HTML in
                let keepOther = "other:\(conflict.option)"
                let key =
                    "\(item.id.rawValue)-\(conflict.field.replacingOccurrences(of: "/", with: "-"))-\(conflict.option)"
                return """
                    <tr id="conflict-\(key)"><td><a href="\(session.path("/items/\(item.id.rawValue)"))">\(item.title)</a>\(item.user.isEmpty ? "" : HTML("<br><span class=\"muted\">\(item.user)</span>"))</td>
                    <td>\(fieldName(conflict.field))\(several[conflict.field] == nil ? "" : HTML(" (\(conflict.option))"))</td>
                    <td>\(value(conflict, current: true, item: item, id: "current-\(key)"))</td>
                    <td>\(value(conflict, current: false, item: item, id: "other-\(key)"))<br><span class="muted">written \(formatter.string(from: conflict.otherWritten))</span></td>
                    <td><a class="button secondary" id="keep-current-\(key)" href="\(session.path("/sync/resolve?\(query(item, conflict, "current"))"))">Keep current</a>
                    <a class="button secondary" id="keep-other-\(key)" href="\(session.path("/sync/resolve?\(query(item, conflict, keepOther))"))">Keep other</a></td></tr>
                    """
            }
        }
        return page(
            "Sync",
            section: .sync,
            session: session,
            flash: flash,
            """
            <section class="card" aria-labelledby="h-sync"><h2 id="h-sync" class="visually-hidden">Status</h2>
            <p id="sync-state">Sync is <strong>on</strong>.</p>
            <dl class="facts">
            <dt>Server</dt><dd id="sync-server"><code>\(status.server ?? "")</code></dd>
            <dt>Account</dt><dd id="sync-account"><code>\(status.account ?? "")</code></dd>
            <dt>This device</dt><dd id="sync-device">\(status.deviceName ?? "")</dd>
            <dt>Pending</dt><dd id="sync-pending">\(status.pending == 0 ? "Nothing waits to be sent" : "\(status.pending) item\(status.pending == 1 ? " waits" : "s wait") to be sent")</dd>
            <dt>Last sync</dt><dd id="sync-last">\(status.lastSync.map { formatter.string(from: $0) } ?? "Not yet")</dd>
            <dt>Conflicts</dt><dd id="sync-conflicts">\(status.conflicts)</dd>
            </dl>
            <div class="actions">\(button("Sync now", action: "/sync/now", session: session, id: "sync-now", style: ""))</div>
            <p class="muted">The agent syncs by itself while it is unlocked; Sync now does it at once.</p>
            </section>
            <section class="card" aria-labelledby="h-conflicts"><h2 id="h-conflicts">Conflicts</h2>
            \(rows.isEmpty ? HTML("<p class=\"muted\" id=\"conflicts-none\">No conflicts: every field has one value on all your devices.</p>") : HTML("""
            <p class="muted">A field changed on two devices before they synced: the later value is in use, the other is kept here until you choose.</p>
            <table id="conflicts"><thead><tr><th scope="col">Password</th><th scope="col">Field</th><th scope="col">Current value</th><th scope="col">Other value</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>\(rows.joined())</tbody></table>
            """))
            </section>
            """
        )
    }

    /// Step 2 of resolving: what keeping the value means, confirmed with a post.
    static func confirmResolve(
        _ item: SyncConflictItem,
        _ conflict: SyncFieldConflict,
        _ choice: SyncConflictChoice,
        session: Session
    ) -> HTML {
        let current = choice == .current
        let keep = current ? "current" : "other:\(conflict.option)"
        return page(
            "Keep the \(current ? "current" : "other") value?",
            section: .sync,
            session: session,
            """
            <section class="card">
            <p id="resolve-summary">\(item.title): keep \(current ? "the current" : "the other") \(fieldName(conflict.field)) on all your devices.</p>
            <dl class="facts">
            <dt>Keep</dt><dd>\(value(conflict, current: current, item: item, id: "resolve-kept"))</dd>
            <dt>Instead of</dt><dd>\(value(conflict, current: !current, item: item, id: "resolve-dropped"))</dd>
            </dl>
            <p class="muted">\(conflict.field == "password" ? "The password you do not keep goes to the password history. " : "")The next sync sends your choice to your other devices.</p>
            <form method="post" action="\(session.path("/sync/resolve"))">\(csrfField(session.csrf))\(HTML.hiddenField("item", item.id.rawValue))\(HTML.hiddenField("field", conflict.field))\(HTML.hiddenField("keep", keep))
            <div class="actions"><button type="submit" id="confirm-resolve">Keep this value</button> <a class="button secondary" id="cancel-resolve" href="\(session.path("/sync"))">Cancel</a></div>
            </form>
            </section>
            """
        )
    }

    /// A field's name in words.
    static func fieldName(_ field: String) -> String {
        switch field {
        case "title": "title"
        case "services": "websites"
        case "user": "user name"
        case "password": "password"
        case "notes": "notes"
        case "totp": "one-time code secret"
        case "folder": "folder"
        case "signIn": "sign-in link"
        default: field.hasPrefix("passkey/") ? "passkey" : field
        }
    }

    /// A value as shown: masked with Reveal for a secret, "(none)" for no value.
    static func value(_ conflict: SyncFieldConflict, current: Bool, item: SyncConflictItem, id: String) -> HTML {
        if conflict.secret {
            let keep = current ? "current" : "other:\(conflict.option)"
            let url =
                "/api/sync/conflicts/\(item.id.rawValue)/value?\(queryString([("field", conflict.field), ("keep", keep)]))"
            return """
                <span class="secret" id="\(id)">••••••••••••</span> <button type="button" class="link" data-reveal-url="\(url)" data-target="\(id)">Reveal</button>
                """
        }
        let shown = current ? conflict.current : conflict.other
        return shown.map { HTML("<span id=\"\(id)\">\($0)</span>") }
            ?? HTML("<span class=\"muted\" id=\"\(id)\">(none)</span>")
    }

    static func query(_ item: SyncConflictItem, _ conflict: SyncFieldConflict, _ keep: String) -> String {
        queryString([("item", item.id.rawValue), ("field", conflict.field), ("keep", keep)])
    }

    static func queryString(_ fields: [(String, String)]) -> String {
        FormURLEncoding.encode(fields)
    }

    static var dateFormatter: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [
            .withFullDate, .withTime, .withColonSeparatorInTime, .withDashSeparatorInDate, .withSpaceBetweenDateAndTime,
        ]
        return formatter
    }
}
