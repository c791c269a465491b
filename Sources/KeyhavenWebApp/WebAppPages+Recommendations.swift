import Foundation
import SecurityRecommendations
import _KeyhavenSupport

extension WebAppPages {
    /// Why an item is flagged, in words for people (ours, after the manner of Apple's Security
    /// Recommendations: what is wrong, why it matters, what to do).
    static func recommendationReason(_ item: AuditItem) -> String {
        var sentences: [String] = []
        if item.issues.contains(.breached) {
            let times = item.breachCount.map { $0 > 1 ? " (seen \(groupedDigits($0)) times)" : "" } ?? ""
            sentences.append(
                "This password appears in a data breach\(times). Attackers try breached passwords first, so this account is at high risk: change the password now."
            )
        }
        if item.issues.contains(.reused) {
            let others = item.reusedWith.count
            sentences.append(
                "You use this password on \(others == 1 ? "another website" : "\(others) other websites"). If one of them is breached, this account can be taken over too."
            )
        }
        if item.issues.contains(.weak) {
            let why =
                item.weakness.map { weakness -> String in
                    let text = weakness.hasSuffix(".") ? String(weakness.dropLast()) : weakness
                    return " (" + text.prefix(1).lowercased() + text.dropFirst() + ")"
                } ?? ""
            sentences.append("This password is easy to guess\(why). A strong, unique password keeps the account safe.")
        }
        if item.issues.contains(.unsecured) {
            sentences.append(
                "This login page is not secured (http): anyone on the network can read the password you send."
            )
        }
        return sentences.joined(separator: " ")
    }

    /// 4213 → "4,213" (Foundation's number formatting is slow on Linux, and this runs per row).
    static func groupedDigits(_ number: Int) -> String {
        let digits = Array(String(number))
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 && digit != "-" && digits[index - 1] != "-" { out += "," }
            out.append(digit)
        }
        return out
    }

    static func recommendations(
        _ items: [AuditItem],
        ignored: [AuditItem],
        summary: AuditSummary,
        expanded: String? = nil,
        status: HTML = "",
        session: Session,
        flash: WebApp.Flash?
    ) -> HTML {
        let groups = AuditSeverity.allCases.filter { $0 != .none }.compactMap { severity -> HTML? in
            let members = items.filter { $0.severity == severity }
            guard !members.isEmpty else { return nil }
            // A vault of thousands shows each group's most urgent first; "Show all" lists the rest.
            let shown = expanded == severity.rawValue ? members[...] : members.prefix(groupLimit)
            let more =
                shown.count < members.count
                ? HTML(
                    "<p><a id=\"more-\(severity.rawValue)\" href=\"\(session.path("/recommendations?group=\(severity.rawValue)#group-\(severity.rawValue)"))\">Show all \(members.count)</a></p>"
                )
                : ""
            return """
                <section class="severity \(severity.rawValue)" aria-labelledby="h-\(severity.rawValue)" id="group-\(severity.rawValue)">
                <h2 id="h-\(severity.rawValue)">\(severity.title) <span class="muted">(\(members.count))</span></h2>
                <ul class="list">\(shown.map { recommendation($0, session: session) }.joined())</ul>
                \(more)
                </section>
                """
        }
        let ignoredRows = ignored.map { item -> HTML in
            """
            <li data-id="\(item.id)"><span><span class="primary">\(item.title)</span> <span class="muted">\(item.user)</span></span>
            \(button("Show again", action: "/recommendations/\(item.id)/restore", session: session))</li>
            """
        }
        return page(
            "Security Recommendations",
            section: .recommendations,
            session: session,
            flash: flash,
            """
            \(status)
            <p id="summary">\(summary.withIssues == 0 ? "No known issues among \(summary.credentials) passwords." : "\(items.count) of \(summary.credentials) passwords need attention, most urgent first.")</p>
            \(summary.notices.map { HTML("<p class=\"notice warning\">\($0)</p>") }.joined())
            \(groups.joined())
            \(ignored.isEmpty ? "" : HTML("<details class=\"card\" id=\"ignored\"><summary>Ignored (\(ignored.count))</summary><ul class=\"list\">\(ignoredRows.joined())</ul></details>"))
            <p class="muted">Breach check: \(breachWords(summary.breachCheck)). The same report as <code>keyhaven audit --json</code>: <a href="\(session.path("/api/audit"))">/api/audit</a>.</p>
            """
        )
    }

    /// Items shown per severity group before "Show all".
    static let groupLimit = 100

    static func recommendation(_ item: AuditItem, session: Session) -> HTML {
        let upgrade = item.actions.upgrade?.strongPassword == true
        let passkey = item.actions.upgrade?.passkey == true
        return """
            <li data-id="\(item.id)" class="recommendation">
            <div class="row-link"><a href="\(session.path("/items/\(item.id)"))"><span class="primary">\(item.title)</span></a> <span class="muted">\(item.user.isEmpty ? "(no user name)" : item.user)</span> \(badges(item.issues.filter { $0 != .unsecured }.map(\.rawValue)))
            <p class="reason">\(recommendationReason(item))</p></div>
            <div class="actions">
            \(passkey ? button("Upgrade to passkey", action: "/items/\(item.id)/upgrade-to-passkey", session: session, id: "passkey-\(item.id)", style: "") : "")
            \(upgrade ? button("Upgrade", action: "/items/\(item.id)/upgrade", session: session, id: "upgrade-\(item.id)", style: passkey ? "secondary" : "") : "")
            \(item.actions.changePasswordURL.map { HTML("<a class=\"button secondary\" data-action=\"change\" href=\"\($0)\" target=\"_blank\" rel=\"noopener noreferrer\">Change on website</a>") } ?? "")
            \(button("Ignore", action: "/recommendations/\(item.id)/ignore", session: session, id: "ignore-\(item.id)"))
            </div></li>
            """
    }

    // MARK: The audit as it progresses

    /// Where the audit is, for a page made from it: nothing once it is done; otherwise a status
    /// line that the page's script (`app.js`) keeps current — it reloads a page made before the
    /// findings it shows were ready, and adds each site's answer to the recommendations as it
    /// comes (`/api/audit/updates`).
    static func auditStatus(_ audit: AuditCache) -> HTML {
        guard let text = auditStatusText(audit) else { return "" }
        return """
            <p class="notice" id="audit-status" role="status" aria-live="polite" data-audit-run="\(String(audit.run))" data-audit-generation="\(String(audit.generation))" data-audit-wait="\(audit.waitingFor == nil ? "" : "1")">\(text)</p>
            """
    }

    /// The status line's words, nil when there is nothing to wait for.
    static func auditStatusText(_ audit: AuditCache) -> String? {
        if audit.waitingFor != nil {
            if audit.stage < .offline || audit.made == .distantPast {
                return "Checking your passwords for breached, reused and weak ones…"
            }
            return "The vault changed: checking it again…"
        }
        guard audit.lookingUp else { return nil }
        if audit.report.summary.breachCheck == .pending { return "Asking the breach range API…" }
        let left = audit.report.summary.pendingSites
        return left == 0
            ? "Looking up change-password pages and upgrades…"
            : "Looking up change-password pages and upgrades: \(left) site\(left == 1 ? "" : "s") left…"
    }

    /// A page whose findings are not ready yet: it says so and reloads itself when they are.
    static func checking(
        _ audit: AuditCache,
        session: Session,
        flash: WebApp.Flash?,
        title: String = "Security Recommendations"
    ) -> HTML {
        let count = audit.rows.count
        let words =
            count > 0 ? "\(count) passwords in the vault. This page updates itself." : "This page updates itself."
        return page(
            title,
            section: title == "Overview" ? .overview : .recommendations,
            session: session,
            flash: flash,
            """
            \(auditStatus(audit))
            <p class="muted" id="checking">\(words)</p>
            """
        )
    }

    // MARK: Upgrade progress

    static func upgrade(_ run: UpgradeRun.Snapshot, session: Session) -> HTML {
        let done = run.phase == UpgradeRun.Phase.done.rawValue
        let waiting = run.phase == UpgradeRun.Phase.waitingForPerson.rawValue
        let stepState = { (reached: Bool, active: Bool) -> String in reached ? "done" : active ? "active" : "todo" }
        return page(
            "Upgrade \(run.user.isEmpty ? run.service : "\(run.user) on \(run.service)")",
            section: .recommendations,
            session: session,
            headExtra: done ? "" : HTML("<noscript><meta http-equiv=\"refresh\" content=\"2\"></noscript>"),
            """
            <section class="card" id="upgrade" data-run="\(run.id)" data-phase="\(run.phase)" aria-live="polite">
            <ol class="steps">
            <li data-state="\(stepState(done || waiting, !done && !waiting))">\(run.target == "passkey" ? "Making a passkey for \(run.service) (kept in Keyhaven's journal before it is sent, so nothing is lost)" : "Asking \(run.service) for a new strong password under its rules (kept in Keyhaven's journal before it is sent, so nothing is lost)")</li>
            \(waiting || run.interfaceURL != nil ? HTML("<li data-state=\"\(stepState(done, waiting))\">\(run.service) asks you to confirm</li>") : "")
            <li data-state="\(stepState(done, false))">Result</li>
            </ol>
            \(waiting && !done ? HTML("<p class=\"notice warning\" id=\"confirm\">\(run.service) asks you to confirm on its own page. <a id=\"service-page\" href=\"\(run.interfaceURL ?? "")\" target=\"_blank\" rel=\"noopener noreferrer\">Open \(run.service)'s page</a>, then come back here.</p>") : "")
            \(done ? HTML("<p class=\"notice \(run.outcome == "upgraded" ? "ok" : "error")\" id=\"result\" data-outcome=\"\(run.outcome ?? "")\">\(run.message ?? "")</p><p><a href=\"\(session.path("/items/\(run.credential)"))\" id=\"back\">Back to the password</a> · <a href=\"\(session.path("/recommendations"))\">Security Recommendations</a></p>") : HTML("<div class=\"actions\">\(button(run.cancelRequested ? "Cancelling…" : "Cancel", action: "/upgrades/\(run.id)/cancel", session: session, id: "cancel"))</div>"))
            </section>
            """
        )
    }
}
