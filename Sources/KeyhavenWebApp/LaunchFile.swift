import Foundation
import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one-shot page `keyhaven ui` opens instead of the launch URL (security review #3).
///
/// A browser started with the launch URL as an argument shows it to every local user in
/// `/proc/PID/cmdline`, and the first to redeem it owns the session. As Jupyter does, the URL goes
/// into a small HTML file instead, private to the person (mode 0600, created with
/// `O_EXCL | O_NOFOLLOW` by ``PrivateFile``, in the agent's private runtime folder), and the
/// browser is given that file's *path*. The page sends the browser on to the launch URL (a meta
/// refresh, and a link for browsers that do not follow it; no script, so it works whatever the
/// browser's settings). The web app removes the file once its secret is redeemed or expired.
enum LaunchFile {
    /// Writes the redirect page to `url` into `folder` as `launch-NAME.html` and returns its URL.
    ///
    /// The one function that writes a launch file: `folder` must be a folder of ours that nobody
    /// else can enter (0700 or stricter, not a symbolic link), else nothing is written.
    ///
    /// - Throws: ``WebAppError`` `.forbidden` for a folder that is not such a folder;
    ///   ``PrivateFileError`` when the file cannot be created (it never writes through or over an
    ///   existing path).
    static func write(url: String, in folder: URL, name: String) throws -> URL {
        var status = stat()
        guard lstat(folder.path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR, status.st_uid == getuid(),
            status.st_mode & 0o077 == 0
        else {
            throw WebAppError(
                .forbidden,
                "\(folder.path) is not a private folder of yours (mode 0700): no launch file was written there."
            )
        }
        let file = folder.appendingPathComponent("launch-\(name).html")
        try PrivateFile.create(at: file, contents: Array(page(url).rendered.utf8))
        return file
    }

    /// The page: a meta refresh and a link to `url`, nothing else (no referrer is sent from a file).
    static func page(_ url: String) -> HTML {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="referrer" content="no-referrer">
        <meta http-equiv="refresh" content="0;url=\(url)">
        <title>Opening Keyhaven</title></head>
        <body><p><a href="\(url)">Open Keyhaven</a></p></body></html>
        """
    }

    /// Removes a launch file (used, expired, or the app stopped); a missing one is fine.
    static func remove(_ file: URL) {
        unlink(file.path)
    }
}
