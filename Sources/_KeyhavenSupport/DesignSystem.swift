/// The one look of everything Keyhaven serves — the web app, the identity provider's sign-in,
/// consent and account pages, and shiny's pages: CSS custom properties (colours, a spacing scale,
/// radii), system fonts, dark mode through `prefers-color-scheme`, visible focus rings, and
/// contrast of at least 4.5:1 for text (WCAG 2.2 AA) in both schemes.
///
/// Served as a file (``path``) so every page's Content-Security-Policy can say `style-src 'self'`
/// with no inline style at all.
public enum DesignSystem {
    /// Where each server serves ``stylesheet``.
    public static let path = "/assets/keyhaven.css"

    /// The `<link>` every page's head carries.
    public static let link = HTML(unsafeRaw: #"<link rel="stylesheet" href="/assets/keyhaven.css">"#)

    /// A page of its own: the shared head, a centred sheet (sign-in, consent, confirmation pages).
    /// `brand` names the service ("shiny", "Sign in with Keyhaven").
    public static func sheet(title: String, brand: String, body: HTML) -> HTML {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="color-scheme" content="light dark">
        <title>\(title) · \(brand)</title>
        \(link)
        </head><body class="sheet-page"><main class="sheet" id="main">
        <p class="brand">\(brand)</p>
        <h1>\(title)</h1>
        \(body)
        </main></body></html>
        """
    }

    public static let stylesheet = #"""
        :root {
          color-scheme: light dark;
          --font: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
          --mono: ui-monospace, "SF Mono", "Cascadia Mono", "DejaVu Sans Mono", Menlo, monospace;
          --space-1: .25rem; --space-2: .5rem; --space-3: .75rem; --space-4: 1rem; --space-5: 1.5rem;
          --space-6: 2rem; --space-7: 3rem;
          --radius: .625rem; --radius-small: .375rem;
          --bg: #f5f5f7; --surface: #ffffff; --surface-2: #f0f0f3; --border: #d2d2d7;
          --text: #1d1d1f; --muted: #5f5f66; --accent: #0a5fd0; --accent-text: #ffffff;
          --danger: #b3261e; --danger-bg: #fdecea; --warning: #8a4b00; --warning-bg: #fff4e0;
          --ok: #1b6e35; --ok-bg: #e6f4ea; --info-bg: #e8f0fe;
          --focus: #0a5fd0;
          --shadow: 0 1px 2px rgba(0,0,0,.06), 0 4px 16px rgba(0,0,0,.06);
          --meter-0: #b3261e; --meter-1: #c4470b; --meter-2: #a86b00; --meter-3: #2e7d32; --meter-4: #1b6e35;
        }
        @media (prefers-color-scheme: dark) {
          :root {
            --bg: #000000; --surface: #1c1c1e; --surface-2: #2c2c2e; --border: #3a3a3c;
            --text: #f5f5f7; --muted: #a1a1a6; --accent: #4c9bff; --accent-text: #00172f;
            --danger: #ff8a80; --danger-bg: #3b1512; --warning: #ffc266; --warning-bg: #33240a;
            --ok: #7fd99a; --ok-bg: #10301b; --info-bg: #10243f;
            --focus: #7ab5ff;
            --shadow: 0 1px 2px rgba(0,0,0,.5);
            --meter-0: #ff8a80; --meter-1: #ffab70; --meter-2: #ffd166; --meter-3: #8bd49a; --meter-4: #57c27a;
          }
        }
        *, *::before, *::after { box-sizing: border-box; }
        html { font-size: 100%; }
        body { margin: 0; font-family: var(--font); font-size: 1rem; line-height: 1.5; color: var(--text);
          background: var(--bg); }
        a { color: var(--accent); text-underline-offset: .15em; }
        :focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; border-radius: var(--radius-small); }
        h1 { font-size: 1.75rem; line-height: 1.2; margin: 0 0 var(--space-4); letter-spacing: -.01em; }
        h2 { font-size: 1.25rem; margin: var(--space-6) 0 var(--space-3); }
        h3 { font-size: 1.05rem; margin: var(--space-5) 0 var(--space-2); }
        p { margin: 0 0 var(--space-3); }
        code, .mono { font-family: var(--mono); font-size: .95em; }
        .muted { color: var(--muted); }
        .skip { position: absolute; left: -999px; }
        .skip:focus { left: var(--space-4); top: var(--space-4); background: var(--surface); padding: var(--space-2); z-index: 9; }
        .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }

        /* Forms */
        label { display: block; font-weight: 600; margin: var(--space-4) 0 var(--space-1); }
        .field-hint { color: var(--muted); font-size: .9rem; margin-top: var(--space-1); }
        input, select, textarea { font: inherit; color: var(--text); background: var(--surface);
          border: 1px solid var(--border); border-radius: var(--radius-small); padding: var(--space-2) var(--space-3);
          width: 100%; min-height: 2.5rem; }
        input[type=checkbox], input[type=radio] { width: auto; min-height: 0; margin-right: var(--space-2); }
        input[type=range] { padding: 0; }
        label.check { font-weight: 400; display: flex; align-items: center; }
        fieldset { border: 1px solid var(--border); border-radius: var(--radius-small); padding: var(--space-2) var(--space-4) var(--space-4); margin: var(--space-4) 0 0; }
        legend { font-weight: 600; padding: 0 var(--space-1); }
        fieldset label:has(input[type=radio]), fieldset label:has(input[type=checkbox]) { font-weight: 400; }
        textarea { min-height: 5rem; font-family: var(--mono); }
        button, .button { font: inherit; font-weight: 600; display: inline-flex; align-items: center; gap: var(--space-2);
          border: 1px solid transparent; border-radius: var(--radius-small); padding: var(--space-2) var(--space-4);
          min-height: 2.5rem; cursor: pointer; text-decoration: none; background: var(--accent); color: var(--accent-text); }
        button.secondary, .button.secondary { background: var(--surface-2); color: var(--text); border-color: var(--border); }
        button.danger, .button.danger { background: var(--danger); color: #fff; }
        @media (prefers-color-scheme: dark) { button.danger, .button.danger { color: #2b0000; } }
        button.link { background: none; color: var(--accent); padding: 0; min-height: 0; font-weight: 400; text-decoration: underline; }
        button:disabled { opacity: .55; cursor: not-allowed; }
        .actions { display: flex; flex-wrap: wrap; gap: var(--space-2); align-items: center; margin-top: var(--space-4); }
        form.inline { display: inline; margin: 0; }

        /* Messages */
        .notice { border-radius: var(--radius-small); padding: var(--space-3) var(--space-4); margin: var(--space-3) 0; background: var(--info-bg); }
        .notice.error, .error { color: var(--danger); }
        .notice.error { background: var(--danger-bg); }
        .notice.ok, .ok { color: var(--ok); }
        .notice.ok { background: var(--ok-bg); }
        .notice.warning { background: var(--warning-bg); color: var(--warning); }

        /* A centred sheet: sign-in, consent, confirmation */
        .sheet-page { display: flex; justify-content: center; padding: var(--space-7) var(--space-4); }
        .sheet { overflow-wrap: anywhere; width: 100%; max-width: 26rem; background: var(--surface); border: 1px solid var(--border);
          border-radius: var(--radius); box-shadow: var(--shadow); padding: var(--space-6); }
        .sheet .brand { color: var(--muted); font-weight: 600; font-size: .9rem; margin-bottom: var(--space-2); display: flex; align-items: center; gap: var(--space-2); }
        .sheet form button { width: 100%; justify-content: center; margin-top: var(--space-3); }
        .sheet form input + button, .sheet form label + button { margin-top: var(--space-5); }
        .note { color: var(--muted); }

        /* The app: a sidebar and a content column */
        .app { display: grid; grid-template-columns: 14rem 1fr; min-height: 100vh; }
        .sidebar { background: var(--surface); border-right: 1px solid var(--border); padding: var(--space-5) var(--space-3); }
        .sidebar .brand { font-weight: 700; font-size: 1.1rem; padding: 0 var(--space-3) var(--space-4); display: flex; align-items: center; gap: var(--space-2); color: var(--text); text-decoration: none; }
        .brand .logo { color: var(--accent); flex: none; }
        .sidebar ul { list-style: none; margin: 0; padding: 0; }
        .sidebar a.nav { display: block; padding: var(--space-2) var(--space-3); border-radius: var(--radius-small);
          color: var(--text); text-decoration: none; }
        .sidebar a.nav:hover { background: var(--surface-2); }
        .sidebar a.nav[aria-current=page] { background: var(--accent); color: var(--accent-text); }
        .sidebar form { margin-top: var(--space-5); padding: 0 var(--space-3); }
        .content { padding: var(--space-6); max-width: 60rem; width: 100%; }
        @media (max-width: 44rem) {
          .app { grid-template-columns: 1fr; }
          .sidebar { border-right: 0; border-bottom: 1px solid var(--border); }
          .sidebar ul { display: flex; flex-wrap: wrap; gap: var(--space-1); }
          .content { padding: var(--space-4); }
        }

        /* Cards, lists, tables */
        .card { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius);
          padding: var(--space-5); margin-bottom: var(--space-4); box-shadow: var(--shadow); }
        .card > :first-child, .card > .visually-hidden + * { margin-top: 0; }
        .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(15rem, 1fr)); gap: var(--space-4); }
        .stat { font-size: 2rem; font-weight: 700; line-height: 1; }
        .list { list-style: none; margin: 0; padding: 0; background: var(--surface); border: 1px solid var(--border);
          border-radius: var(--radius); overflow: hidden; }
        .list > li { padding: var(--space-3) var(--space-4); border-top: 1px solid var(--border); display: flex;
          gap: var(--space-3); align-items: center; justify-content: space-between; flex-wrap: wrap; }
        .list > li:first-child { border-top: 0; }
        .list .primary { font-weight: 600; }
        .row-facts { display: inline-flex; gap: var(--space-3); align-items: center; }
        .list a.row-link { color: var(--text); text-decoration: none; flex: 1; min-width: 12rem; }
        .list a.row-link:hover .primary { text-decoration: underline; }
        table { border-collapse: collapse; width: 100%; background: var(--surface); }
        th, td { text-align: left; padding: var(--space-2) var(--space-3); border-bottom: 1px solid var(--border); vertical-align: top; }
        th { font-size: .85rem; color: var(--muted); font-weight: 600; }
        dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: var(--space-2) var(--space-5); margin: 0; }
        dl.facts dt { color: var(--muted); }
        dl.facts dd { margin: 0; overflow-wrap: anywhere; }

        /* Badges and meters */
        .badges { display: inline-flex; gap: var(--space-1); flex-wrap: wrap; }
        .badge { display: inline-block; font-size: .75rem; font-weight: 700; padding: .1rem .5rem; border-radius: 999px;
          background: var(--surface-2); color: var(--text); border: 1px solid var(--border); }
        .badge.breached { background: var(--danger-bg); color: var(--danger); border-color: transparent; }
        .badge.reused, .badge.weak { background: var(--warning-bg); color: var(--warning); border-color: transparent; }
        .badge.otp, .badge.passkey { background: var(--info-bg); color: var(--accent); border-color: transparent; }
        .meter { display: inline-flex; gap: 3px; width: 8rem; height: .5rem; vertical-align: middle; margin-right: var(--space-2); }
        .meter span { flex: 1; border-radius: 2px; background: var(--surface-2); border: 1px solid var(--border); }
        .meter[data-score="0"] span:nth-child(-n+1) { background: var(--meter-0); border-color: var(--meter-0); }
        .meter[data-score="1"] span:nth-child(-n+2) { background: var(--meter-1); border-color: var(--meter-1); }
        .meter[data-score="2"] span:nth-child(-n+3) { background: var(--meter-2); border-color: var(--meter-2); }
        .meter[data-score="3"] span:nth-child(-n+4) { background: var(--meter-3); border-color: var(--meter-3); }
        .meter[data-score="4"] span { background: var(--meter-4); border-color: var(--meter-4); }
        .secret { font-family: var(--mono); letter-spacing: .05em; overflow-wrap: anywhere; }
        .otp-code { font-family: var(--mono); font-size: 1.5rem; letter-spacing: .2em; }
        .pairing-code { font-family: var(--mono); font-size: 2.5rem; letter-spacing: .3em; font-weight: 700; }

        /* Charts (inline SVG drawn on the server) */
        svg.chart { width: 100%; height: auto; max-width: 28rem; display: block; }
        svg.chart text { fill: var(--text); font-family: var(--font); font-size: 12px; }
        svg.chart .bar-track { fill: var(--surface-2); }
        svg.chart .bar-breached { fill: var(--danger); }
        svg.chart .bar-reused, svg.chart .bar-weak { fill: var(--warning); }
        svg.chart .bar-unsecured { fill: var(--muted); }
        svg.chart .bar-score-0 { fill: var(--meter-0); } svg.chart .bar-score-1 { fill: var(--meter-1); }
        svg.chart .bar-score-2 { fill: var(--meter-2); } svg.chart .bar-score-3 { fill: var(--meter-3); }
        svg.chart .bar-score-4 { fill: var(--meter-4); }

        /* Severity groups */
        .severity { border-left: 4px solid var(--border); padding-left: var(--space-3); }
        .severity.high { border-color: var(--danger); }
        .severity.reused-and-weak, .severity.reused, .severity.weak { border-color: var(--warning); }
        .reason { color: var(--muted); margin: var(--space-1) 0 0; }
        .steps { list-style: none; padding: 0; margin: var(--space-3) 0; }
        .steps li { padding: var(--space-1) 0; }
        .steps li[data-state=done]::before { content: "✓ "; color: var(--ok); font-weight: 700; }
        .steps li[data-state=active]::before { content: "… "; color: var(--accent); font-weight: 700; }
        """#
}
