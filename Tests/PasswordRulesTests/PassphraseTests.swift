import Foundation
import KeyhavenTesting
import PasswordRules
import Testing

@Suite(.offCooperativePool)
struct PassphraseTests {
    @Test func theShippedListIsTheEFFLongList() {
        let list = Passphrase.wordList
        #expect(list.count == 7776 && Set(list).count == 7776)
        #expect(list.first == "abacus" && list.last == "zoom")
        #expect(list.allSatisfy { !$0.isEmpty && $0.allSatisfy { ("a"..."z").contains($0) || $0 == "-" } })
        #expect(abs(Passphrase.bitsPerWord - 12.925) < 0.001)
        #expect(abs(Passphrase(words: 6).bits - 77.549) < 0.001)
    }

    @Test func wordsComeFromTheListWithTheSeparator() {
        var rng = SeededRandomNumberGenerator(seed: 7)
        let list = Set(Passphrase.wordList)
        let phrase = Passphrase(words: 5, separator: " ").generate(using: &rng)
        let words = phrase.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        #expect(words.count == 5 && words.allSatisfy(list.contains))
        var again = SeededRandomNumberGenerator(seed: 7)
        #expect(Passphrase(words: 5, separator: " ").generate(using: &again) == phrase)
        var other = SeededRandomNumberGenerator(seed: 8)
        #expect(Passphrase(words: 5, separator: " ").generate(using: &other) != phrase)
    }

    /// Every word is reachable and draws are close to uniform (a modulo-biased draw over 2^64 would
    /// not show at this size, but a broken index — always the start of the list — would).
    @Test func drawsSpreadOverTheWholeList() {
        var rng = SeededRandomNumberGenerator(seed: 1)
        let index = Dictionary(uniqueKeysWithValues: Passphrase.wordList.enumerated().map { ($1, $0) })
        var buckets = [Int](repeating: 0, count: 8)
        for _ in 0..<4000 {
            let word = Passphrase(words: 1).generate(using: &rng)
            buckets[index[word]! * 8 / 7776] += 1
        }
        #expect(buckets.allSatisfy { (400...600).contains($0) }, "\(buckets)")
    }
}
