import Foundation

/// zxcvbn's data, loaded once from the copies compiled into the binary: the six ranked frequency
/// lists and the four keyboard adjacency graphs (python `zxcvbn` 4.5.0; see Resources/README.md).
struct StrengthData: Sendable {
    let dictionary: RankedDictionary
    /// Graphs in zxcvbn's order: qwerty, dvorak, keypad, mac_keypad.
    let graphs: [AdjacencyGraph]

    static let shared = StrengthData()

    private init() {
        let lists = [
            embeddedFrequencyListPasswords, embeddedFrequencyListEnglishWikipedia, embeddedFrequencyListFemaleNames,
            embeddedFrequencyListSurnames, embeddedFrequencyListUSTVAndFilm, embeddedFrequencyListMaleNames,
        ]
        dictionary = RankedDictionary(
            lists: lists.enumerated().map { index, text in
                (UInt8(index), text.split(separator: "\n").map { Array($0.unicodeScalars) })
            }
        )
        graphs = AdjacencyGraph.load(json: embeddedAdjacencyGraphsJSON)
    }
}

/// A keyboard layout: for each key, its neighbours in a fixed direction order; each neighbour is
/// the key's characters (unshifted, then shifted), or nothing.
struct AdjacencyGraph: Sendable {
    let name: String
    /// Neighbours by ASCII code; keys outside ASCII have none.
    let neighbors: [[[Unicode.Scalar]?]?]
    /// Whether shifted characters count (qwerty and dvorak; not the keypads).
    let countsShift: Bool
    /// zxcvbn's starting positions and average degree for the guess estimate: the qwerty values for
    /// both keyboards, the keypad values for both keypads.
    let startingPositions: Double
    let averageDegree: Double

    static let order = ["qwerty", "dvorak", "keypad", "mac_keypad"]

    static func load(json: String) -> [AdjacencyGraph] {
        guard
            let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)),
            let raw = object as? [String: [String: [Any]]]
        else {
            preconditionFailure("the embedded adjacency graphs are malformed")
        }
        func table(_ name: String) -> [[[Unicode.Scalar]?]?] {
            var table = [[[Unicode.Scalar]?]?](repeating: nil, count: 128)
            for (key, list) in raw[name]! {
                let scalar = key.unicodeScalars.first!
                table[Int(scalar.value)] = list.map { ($0 as? String).map { Array($0.unicodeScalars) } }
            }
            return table
        }
        func statistics(_ name: String) -> (Double, Double) {
            let graph = raw[name]!
            var total = 0
            for list in graph.values {
                total += list.filter { $0 is String }.count
            }
            // calc_average_degree: sum of non-empty neighbour counts / number of keys.
            return (Double(graph.count), Double(total) / Double(graph.count))
        }
        let keyboard = statistics("qwerty")
        let keypad = statistics("keypad")
        return order.map { name in
            let isKeyboard = name == "qwerty" || name == "dvorak"
            let (starts, degree) = isKeyboard ? keyboard : keypad
            return AdjacencyGraph(
                name: name,
                neighbors: table(name),
                countsShift: isKeyboard,
                startingPositions: starts,
                averageDegree: degree
            )
        }
    }
}
