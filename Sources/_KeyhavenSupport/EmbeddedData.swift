/// Parses data compiled into the binary by `scripts/embed-resources.py` (Apple's quirks and
/// shared-credential groups, the Public Suffix List…). The data was checked when it was embedded, so
/// a failure here is a build defect — the parser and the embedded file disagree — not something a
/// caller can handle: it stops the process, naming the file.
package func parseEmbedded<Value>(_ file: String, _ parse: () throws -> Value) -> Value {
    do {
        return try parse()
    } catch {
        preconditionFailure("the embedded \(file) is malformed: \(error)")
    }
}
