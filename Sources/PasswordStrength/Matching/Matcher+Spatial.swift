extension Matcher {
    /// Characters typed with shift on qwerty and dvorak (`SHIFTED_RX`).
    static let shiftedCharacters: Set<Unicode.Scalar> = Set(
        #"~!@#$%^&*()_+QWERTYUIOP{}|ASDFGHJKL:"ZXCVBNM<>?"#.unicodeScalars
    )

    /// `spatial_match`: runs of adjacent keys (`qwerty`, `zxcvbn`, `7896`) on each keyboard.
    func spatialMatches(_ password: [Unicode.Scalar], into matches: inout [Match]) {
        let start = matches.count
        for (index, graph) in data.graphs.enumerated() {
            spatialMatches(password, graph: graph, graphIndex: UInt8(index), into: &matches)
        }
        Self.stableSortByPosition(&matches, from: start)
    }

    private func spatialMatches(
        _ password: [Unicode.Scalar],
        graph: AdjacencyGraph,
        graphIndex: UInt8,
        into matches: inout [Match]
    ) {
        var i = 0
        while i < password.count - 1 {
            var j = i + 1
            var lastDirection = -1
            var turns: Int32 = 0
            var shiftedCount: Int32 = graph.countsShift && Self.shiftedCharacters.contains(password[i]) ? 1 : 0
            while true {
                let previous = password[j - 1]
                var found = false
                if j < password.count, previous.isASCII, let adjacents = graph.neighbors[Int(previous.value)] {
                    let current = password[j]
                    for (direction, neighbor) in adjacents.enumerated() {
                        guard let neighbor, let position = neighbor.firstIndex(of: current) else { continue }
                        found = true
                        if position == 1 {
                            // index 1 of a key's characters is its shifted character
                            shiftedCount += 1
                        }
                        if lastDirection != direction {
                            // every spatial pattern starts with a turn
                            turns += 1
                            lastDirection = direction
                        }
                        break
                    }
                }
                if found {
                    j += 1
                } else {
                    if j - i > 2 {
                        var match = Match(i: i, j: j - 1, kind: .spatial)
                        match.graph = graphIndex
                        match.turns = turns
                        match.shiftedCount = shiftedCount
                        matches.append(match)
                    }
                    i = j
                    break
                }
            }
        }
    }
}
