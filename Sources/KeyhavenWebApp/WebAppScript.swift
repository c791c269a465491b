/// `/assets/app.js`: the app's only script, `Resources/app.js` (compiled in by
/// scripts/embed-resources.py; checked by scripts/lint-browser-scripts.mjs).
enum WebAppScript {
    static let source = embeddedWebAppResources.first { $0.path == "app.js" }?.contents ?? ""
}
