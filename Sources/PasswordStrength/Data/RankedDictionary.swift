/// Ranked word lists with an index built for scanning every substring of a password.
///
/// The index is an open-addressing hash table over *every prefix* of every word, keyed by an
/// incrementally computed 64-bit FNV-1a hash of the code points. Scanning from a start position
/// extends the hash one character at a time and stops as soon as the text so far is no word's
/// prefix — a trie walk without a trie's pointers. Word entries are verified character by
/// character, so hash collisions can cost time but never a wrong match.
struct RankedDictionary: Sendable {
    /// Which list a word came from (`dictionary_name` in zxcvbn).
    static let names = [
        "passwords", "english_wikipedia", "female_names", "surnames", "us_tv_and_film", "male_names", "user_inputs",
    ]
    static let userInputsIndex: UInt8 = 6

    private var keys: [UInt64]
    /// -1: a prefix only; otherwise the index of the word.
    private var values: [Int32]
    private let shift: UInt64
    private var wordStart: [Int32] = []
    private var wordLength: [Int32] = []
    private var wordRank: [Int32] = []
    private var wordDictionary: [UInt8] = []
    private var storage: [Unicode.Scalar] = []

    static let fnvOffset: UInt64 = 0xCBF2_9CE4_8422_2325
    static let fnvPrime: UInt64 = 0x0000_0100_0000_01B3

    @inline(__always)
    static func step(_ hash: UInt64, _ scalar: Unicode.Scalar) -> UInt64 {
        let next = (hash ^ UInt64(scalar.value)) &* fnvPrime
        return next == 0 ? 1 : next
    }

    /// An index sized for about `prefixCapacity` distinct prefixes.
    init(prefixCapacity: Int) {
        var bits = 4
        while (1 << bits) < prefixCapacity * 2 {
            bits += 1
        }
        keys = [UInt64](repeating: 0, count: 1 << bits)
        values = [Int32](repeating: -1, count: 1 << bits)
        shift = UInt64(64 - bits)
    }

    /// Builds the index for ranked lists: `lists[d][r]` is the word of rank `r + 1` in dictionary `d`.
    /// A word listed twice in one list keeps its last rank, as python's `build_ranked_dict` does.
    init(lists: [(dictionary: UInt8, words: [[Unicode.Scalar]])]) {
        var characters = 0
        for list in lists {
            for word in list.words {
                characters += word.count
            }
        }
        self.init(prefixCapacity: characters)
        for list in lists {
            for (index, word) in list.words.enumerated() {
                insert(word, rank: Int32(index + 1), dictionary: list.dictionary)
            }
        }
    }

    @inline(__always)
    private func slot(for hash: UInt64) -> Int {
        Int(truncatingIfNeeded: (hash &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    private mutating func insert(_ word: [Unicode.Scalar], rank: Int32, dictionary: UInt8) {
        guard !word.isEmpty else { return }
        var hash = Self.fnvOffset
        for (position, scalar) in word.enumerated() {
            hash = Self.step(hash, scalar)
            var index = slot(for: hash)
            while keys[index] != 0 && keys[index] != hash {
                index = (index + 1) & (keys.count - 1)
            }
            keys[index] = hash
            if position == word.count - 1 {
                var existing = values[index]
                while existing >= 0 {
                    if wordDictionary[Int(existing)] == dictionary && isWord(Int(existing), equalTo: word[...]) {
                        wordRank[Int(existing)] = rank  // listed twice: the last rank wins
                        return
                    }
                    existing = overflow[Int(existing)]
                }
                // A word shadowed by an identical word of another list (or a hash collision) goes
                // to an overflow chain: store it as a new word whose entry points at the previous.
                let wordIndex = Int32(wordStart.count)
                wordStart.append(Int32(storage.count))
                wordLength.append(Int32(word.count))
                wordRank.append(rank)
                wordDictionary.append(dictionary)
                storage.append(contentsOf: word)
                overflow.append(values[index])
                values[index] = wordIndex
            }
        }
    }

    /// For each word, the word previously stored under the same hash (usually -1).
    private var overflow: [Int32] = []

    @inline(__always)
    private func isWord(_ index: Int, equalTo text: ArraySlice<Unicode.Scalar>) -> Bool {
        let length = Int(wordLength[index])
        guard length == text.count else { return false }
        let start = Int(wordStart[index])
        var position = text.startIndex
        for offset in 0..<length {
            if storage[start + offset] != text[position] { return false }
            position += 1
        }
        return true
    }

    /// Calls `found(i, j, dictionary, rank)` for every word equal to `text[i...j]`, by increasing `i`,
    /// then `j`, then dictionary.
    func forEachMatch(in text: [Unicode.Scalar], _ found: (Int, Int, UInt8, Int32) -> Void) {
        var hits: [(UInt8, Int32)] = []
        let mask = keys.count - 1
        starts: for i in 0..<text.count {
            var hash = Self.fnvOffset
            for j in i..<text.count {
                hash = Self.step(hash, text[j])
                var index = slot(for: hash)
                while keys[index] != hash {
                    if keys[index] == 0 { continue starts }  // no word starts with text[i...j]
                    index = (index + 1) & mask
                }
                var word = values[index]
                guard word >= 0 else { continue }
                hits.removeAll(keepingCapacity: true)
                while word >= 0 {
                    if isWord(Int(word), equalTo: text[i...j]) {
                        hits.append((wordDictionary[Int(word)], wordRank[Int(word)]))
                    }
                    word = overflow[Int(word)]
                }
                if hits.count > 1 { hits.sort { $0.0 < $1.0 } }
                for (dictionary, rank) in hits {
                    found(i, j, dictionary, rank)
                }
            }
        }
    }
}
