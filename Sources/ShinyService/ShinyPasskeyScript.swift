/// `/assets/shiny-passkeys.js`: the one script shiny's pages load, `Resources/shiny-passkeys.js`
/// (compiled in by scripts/embed-resources.py; checked by scripts/lint-browser-scripts.mjs).
enum ShinyPasskeyScript {
    static let source = embeddedShinyResources.first { $0.path == "shiny-passkeys.js" }?.contents ?? ""
}
