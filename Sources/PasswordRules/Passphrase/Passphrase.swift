import Foundation

/// Passphrases of words drawn uniformly from the EFF's Long Wordlist (7776 words, CC BY 3.0 US; see
/// `Resources/README.md`): each word adds log2(7776) ≈ 12.9 bits.
///
/// ```swift
/// var rng = SystemRandomNumberGenerator()
/// let phrase = Passphrase(words: 6).generate(using: &rng)   // "unsaid-rocker-lurch-…"
/// ```
public struct Passphrase: Sendable, Hashable {
    /// The word list, in its published order.
    public static let wordList: [String] = embeddedEFFLargeWordlist.split(separator: "\n").map(String.init)

    /// Bits of entropy per word: log2 of the list's size.
    public static var bitsPerWord: Double { log2(Double(wordList.count)) }

    /// How many words.
    public var words: Int
    /// What goes between the words.
    public var separator: String

    /// `words` must be at least 1.
    public init(words: Int, separator: String = "-") {
        precondition(words >= 1, "a passphrase has at least one word")
        self.words = words
        self.separator = separator
    }

    /// The entropy of a passphrase of this many words: words · log2(7776).
    public var bits: Double { Double(words) * Self.bitsPerWord }

    /// A passphrase drawn with `rng` (pass a cryptographically secure generator outside tests).
    /// Each word is chosen with `Int.random(in:using:)`, which rejects out-of-range draws: no
    /// modulo bias.
    public func generate<R: RandomNumberGenerator>(using rng: inout R) -> String {
        let list = Self.wordList
        return (0..<words).map { _ in list[Int.random(in: 0..<list.count, using: &rng)] }.joined(separator: separator)
    }

    /// A passphrase from the system's cryptographically secure generator.
    public func generate() -> String {
        var rng = SystemRandomNumberGenerator()
        return generate(using: &rng)
    }
}
