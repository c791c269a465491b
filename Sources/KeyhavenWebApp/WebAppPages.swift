import Foundation
import SecurityRecommendations
import _KeyhavenSupport
import _KeyhavenWeb

/// The app's HTML. Everything is built from ``HTML`` values, which escape every interpolated string;
/// element ids are stable (the browser tests use them). Pages read without JavaScript; `app.js`
/// adds the live parts (reveal, copy, one-time codes, search as you type, strength, progress).
enum WebAppPages {
    /// What a session's pages need: its CSRF token, and the base of its paths (`/s/CAPABILITY`,
    /// security review #5). Every link, form and redirect of the app goes through ``path(_:)``, so
    /// a page of the app leads only to pages of the same session.
    struct Session: Sendable {
        var csrf: String
        var base: String

        /// `path` (an app path such as `/vault`) inside the session: `/s/CAPABILITY/vault`.
        func path(_ path: String) -> String { base + path }
    }

    enum Section: String, CaseIterable {
        case overview, vault, recommendations, generator, transfer, pairing, sync, settings

        var title: String {
            switch self {
            case .overview: "Overview"
            case .vault: "Passwords"
            case .recommendations: "Security Recommendations"
            case .generator: "Generator"
            case .transfer: "Import & export"
            case .pairing: "Browsers"
            case .sync: "Sync"
            case .settings: "Settings"
            }
        }

        var path: String {
            switch self {
            case .overview: "/"
            case .vault: "/vault"
            case .recommendations: "/recommendations"
            case .generator: "/generator"
            case .transfer: "/import"
            case .pairing: "/pairing"
            case .sync: "/sync"
            case .settings: "/settings"
            }
        }
    }

    static func head(_ title: String, session: Session?, extra: HTML = "") -> HTML {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="color-scheme" content="light dark">
        \(session.map { HTML("<meta name=\"csrf-token\" content=\"\($0.csrf)\"><meta name=\"keyhaven-base\" content=\"\($0.base)\">") } ?? "")
        <title>\(title) · Keyhaven</title>
        \(DesignSystem.link)
        <script type="module" src="/assets/app.js"></script>
        \(extra)
        </head>
        """
    }

    /// A page of the unlocked app: the sidebar and the content.
    static func page(
        _ title: String,
        section: Section?,
        session: Session,
        flash: WebApp.Flash? = nil,
        headExtra: HTML = "",
        _ body: HTML
    ) -> HTML {
        let links = Section.allCases.map { item in
            HTML(
                "<li><a class=\"nav\" id=\"nav-\(item.rawValue)\" href=\"\(session.path(item.path))\"\(item == section ? HTML(" aria-current=\"page\"") : "")>\(item.title)</a></li>"
            )
        }
        return """
            \(head(title, session: session, extra: headExtra))
            <body><a class="skip" href="#main">Skip to content</a>
            <div class="app">
            <nav class="sidebar" aria-label="Keyhaven">
            <a class="brand" href="\(session.path("/"))">\(logo) Keyhaven</a>
            <ul>\(links.joined())</ul>
            <form method="post" action="\(session.path("/lock"))">\(csrfField(session.csrf))<button class="secondary" id="lock" type="submit">Lock</button></form>
            </nav>
            <main class="content" id="main">
            <h1>\(title)</h1>
            \(flash.map { HTML("<p class=\"notice \($0.kind)\" id=\"flash\" role=\"status\">\($0.text)</p>") } ?? "")
            \(body)
            </main></div></body></html>
            """
    }

    /// Keyhaven's mark: a shield with a keyhole, in the text colour (inline SVG, no request).
    static let logo = HTML(
        unsafeRaw:
            #"<svg class="logo" aria-hidden="true" width="22" height="22" viewBox="0 0 24 24"><path fill="currentColor" d="M12 1.5 3.5 4.8v6.1c0 5.2 3.6 10 8.5 11.6 4.9-1.6 8.5-6.4 8.5-11.6V4.8L12 1.5Zm0 6a2.5 2.5 0 0 1 1.2 4.7l.8 4.3h-4l.8-4.3A2.5 2.5 0 0 1 12 7.5Z"/></svg>"#
    )

    static func csrfField(_ token: String) -> HTML { .hiddenField("csrf", token) }

    /// A small form with one button (POST to the app path `action`, CSRF token included).
    static func button(
        _ label: String,
        action: String,
        session: Session,
        id: String? = nil,
        style: String = "secondary"
    )
        -> HTML
    {
        """
        <form class="inline" method="post" action="\(session.path(action))">\(csrfField(session.csrf))<button type="submit" class="\(style)"\(id.map { HTML(" id=\"\($0)\"") } ?? "")>\(label)</button></form>
        """
    }

    // MARK: Unlock and errors

    static func unlock(session: Session, vault: String, error: String? = nil) -> HTML {
        """
        \(head("Unlock", session: session))
        <body class="sheet-page"><main class="sheet" id="main">
        <p class="brand">\(logo) Keyhaven</p>
        <h1>Unlock Keyhaven</h1>
        <p class="muted">Vault <code>\(vault)</code></p>
        \(error.map { HTML("<p class=\"notice error\" id=\"error\" role=\"alert\">\($0)</p>") } ?? "")
        <form method="post" action="\(session.path("/unlock"))">
        \(csrfField(session.csrf))
        <label for="master-password">Master password</label>
        <input id="master-password" name="masterPassword" type="password" autocomplete="current-password" required autofocus>
        <button id="unlock" type="submit">Unlock</button>
        </form>
        </main></body></html>
        """
    }

    /// What `/launch` answers: the session's cookie is set with it, and the page moves on to the
    /// session's overview by itself (a same-origin navigation, which carries the Strict cookie), or
    /// with a click.
    static func launched(base: String) -> HTML {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="color-scheme" content="light dark">
        <meta http-equiv="refresh" content="0;url=\(base)/">
        <title>Opening Keyhaven</title>
        \(DesignSystem.link)
        </head>
        <body class="sheet-page"><main class="sheet" id="main">
        <p class="brand">\(logo) Keyhaven</p>
        <p><a id="continue" href="\(base)/">Continue to Keyhaven</a></p>
        </main></body></html>
        """
    }

    /// A page for a refused or failed request: never echoes anything the request carried.
    static func message(_ title: String, _ text: String) -> HTML {
        DesignSystem.sheet(title: title, brand: "Keyhaven", body: "<p id=\"message\">\(text)</p>")
    }

    // MARK: Overview

    static func overview(_ audit: AuditCache, session: Session, flash: WebApp.Flash?) -> HTML {
        guard audit.stage >= .offline else { return checking(audit, session: session, flash: flash, title: "Overview") }
        let report = audit.report
        let summary = report.summary
        let scores = (0...4).map { score in report.items.filter { $0.strengthScore == score }.count }
        let issues: [(String, String, Int)] = [
            ("breached", "Breached", summary.breached), ("reused", "Reused", summary.reused),
            ("weak", "Easily guessed", summary.weak), ("unsecured", "Not secured (http)", summary.unsecured),
        ]
        let healthy = summary.credentials - summary.withIssues
        return page(
            "Overview",
            section: .overview,
            session: session,
            flash: flash,
            """
            \(auditStatus(audit))
            <div class="grid">
            <section class="card" aria-labelledby="h-total"><h2 id="h-total" class="visually-hidden">Passwords</h2>
            <p class="stat" id="count-credentials">\(summary.credentials)</p><p class="muted">passwords in the vault</p></section>
            <section class="card" aria-labelledby="h-issues"><h2 id="h-issues" class="visually-hidden">With issues</h2>
            <p class="stat" id="count-issues">\(summary.withIssues)</p><p class="muted">need your attention · <a href="\(session.path("/recommendations"))">Security Recommendations</a></p></section>
            <section class="card"><h2 class="visually-hidden">Healthy</h2>
            <p class="stat" id="count-healthy">\(healthy)</p><p class="muted">with no known issue</p></section>
            </div>
            <div class="grid">
            <section class="card" aria-labelledby="h-chart-issues"><h2 id="h-chart-issues">Issues</h2>
            \(Charts.bars(issues.map { .init(label: $0.1, value: $0.2, style: "bar-\($0.0)") }, id: "chart-issues", title: "Passwords per issue"))
            </section>
            <section class="card" aria-labelledby="h-chart-strength"><h2 id="h-chart-strength">Strength</h2>
            \(Charts.bars(zip(StrengthWords.all, scores).enumerated().map { .init(label: $0.element.0, value: $0.element.1, style: "bar-score-\($0.offset)") }, id: "chart-strength", title: "Passwords per strength score (zxcvbn 0–4)"))
            </section>
            </div>
            <p class="muted">Breach check: \(breachWords(summary.breachCheck)). Checked in \(String(format: "%.2f", audit.seconds)) s; the report is kept until the vault or the settings change, what websites said in the vault until it is due again.</p>
            """
        )
    }

    static func breachWords(_ check: BreachCheckMode) -> String {
        switch check {
        case .index: "an offline index"
        case .api: "the range API (only 5 hex digits of each hash left this computer)"
        case .psi:
            "a private breach-PSI server (only a 15-bit bucket and a blinded element per password left this computer)"
        case .pending: "waiting for the range API"
        case .skipped: "skipped (see Settings)"
        }
    }

    /// A strength meter: five segments, `score` of them filled.
    static func meter(_ score: Int?, id: String? = nil) -> HTML {
        guard let score else { return "" }
        let word = StrengthWords.all[max(0, min(4, score))]
        return """
            <span class="meter" role="img" aria-label="Strength: \(word) (\(score) of 4)" data-score="\(score)"\(id.map { HTML(" id=\"\($0)\"") } ?? "")><span></span><span></span><span></span><span></span><span></span></span>
            """
    }
}

enum StrengthWords {
    static let all = ["Very weak", "Weak", "Fair", "Strong", "Very strong"]
}

/// Charts drawn on the server as inline SVG (no script, no library): horizontal bars with their
/// values as text, titled for screen readers.
enum Charts {
    struct Bar {
        var label: String
        var value: Int
        var style: String
    }

    static func bars(_ bars: [Bar], id: String, title: String) -> HTML {
        let largest = max(1, bars.map(\.value).max() ?? 1)
        let rowHeight = 28
        let labelWidth = 130
        let barWidth = 220
        let height = rowHeight * bars.count + 4
        let rows = bars.enumerated().map { index, bar -> HTML in
            let y = index * rowHeight + 4
            let width = bar.value == 0 ? 0 : max(2, bar.value * barWidth / largest)
            return """
                <g><text x="0" y="\(y + 15)">\(bar.label)</text>
                <rect class="bar-track" x="\(labelWidth)" y="\(y + 2)" width="\(barWidth)" height="18" rx="3"></rect>
                <rect class="\(bar.style)" x="\(labelWidth)" y="\(y + 2)" width="\(width)" height="18" rx="3"></rect>
                <text x="\(labelWidth + barWidth + 8)" y="\(y + 15)">\(bar.value)</text></g>
                """
        }
        return """
            <svg class="chart" id="\(id)" viewBox="0 0 \(labelWidth + barWidth + 50) \(height)" role="img" aria-labelledby="\(id)-title">
            <title id="\(id)-title">\(title): \(bars.map { "\($0.label) \($0.value)" }.joined(separator: ", "))</title>
            \(rows.joined())
            </svg>
            """
    }
}
