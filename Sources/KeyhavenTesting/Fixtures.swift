public import Foundation

/// Locates and loads files committed next to test sources.
///
/// Tests pass `#filePath`, so fixtures are read from the checkout and no resource bundle is needed.
public enum Fixtures {
    /// The URL of `name` in the `Fixtures` folder beside the calling test file.
    public static func url(_ name: String, filePath: String = #filePath) -> URL {
        URL(fileURLWithPath: filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
            .appendingPathComponent(name)
    }

    /// The contents of `name` in the `Fixtures` folder beside the calling test file.
    public static func data(_ name: String, filePath: String = #filePath) throws -> Data {
        try Data(contentsOf: url(name, filePath: filePath))
    }

    /// Decodes the JSON fixture `name`.
    public static func decode<T: Decodable>(_ type: T.Type, _ name: String, filePath: String = #filePath) throws -> T {
        try JSONDecoder().decode(type, from: data(name, filePath: filePath))
    }

    /// The root of the package checkout, found by walking up from `filePath` to `Package.swift`.
    public static func packageRoot(filePath: String = #filePath) -> URL {
        var url = URL(fileURLWithPath: filePath).deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url
            }
            url.deleteLastPathComponent()
        }
        preconditionFailure("no Package.swift above \(filePath)")
    }
}
