public import Hummingbird
import NIOCore
import _KeyhavenSupport

/// A file a server sends as it is: Keyhaven's style sheet (``DesignSystem``) and each app's browser
/// scripts, which live as `.js` files in the app's `Resources/` folder, compiled in by SwiftPM
/// (`.embedInCode`: the bytes are in the binary, no bundle is looked for at run time) and checked by
/// `scripts/lint-browser-scripts.mjs`.
public struct StaticAsset: ResponseGenerator, Sendable {
    /// Where it is served.
    public var path: String
    public var contentType: String
    public var contents: [UInt8]
    public var cacheControl: String

    public init(path: String, contentType: String, contents: [UInt8], cacheControl: String) {
        self.path = path
        self.contentType = contentType
        self.contents = contents
        self.cacheControl = cacheControl
    }

    /// The style sheet every Keyhaven page links (``DesignSystem/path``).
    public static func stylesheet(cacheControl: String) -> StaticAsset {
        StaticAsset(
            path: DesignSystem.path,
            contentType: "text/css; charset=utf-8",
            contents: Array(DesignSystem.stylesheet.utf8),
            cacheControl: cacheControl
        )
    }

    /// A browser script (an app's `PackageResources.NAME_js`) served at `path`.
    public static func script(_ path: String, _ contents: [UInt8], cacheControl: String) -> StaticAsset {
        StaticAsset(
            path: path,
            contentType: "text/javascript; charset=utf-8",
            contents: contents,
            cacheControl: cacheControl
        )
    }

    public var response: Response {
        Response(
            status: .ok,
            headers: [.contentType: contentType, .cacheControl: cacheControl],
            body: .init(byteBuffer: ByteBuffer(bytes: contents))
        )
    }

    public func response(from request: Request, context: some RequestContext) -> Response { response }
}

extension Router {
    /// Serves each asset at its path (`GET`).
    public func add(assets: [StaticAsset]) {
        for asset in assets {
            get(RouterPath(asset.path)) { _, _ in asset.response }
        }
    }
}
