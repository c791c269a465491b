import Crypto
import Foundation
import Testing
import _KeyhavenSupport

@testable import AutoFill

/// CPACE-X25519-SHA512 against the draft's own test vectors (draft-irtf-cfrg-cpace-21, in
/// Fixtures/cpace-x25519-sha512.json with where they came from), and Keyhaven's Elligator 2 map
/// against the independent Python one (Fixtures/autofill-vectors.json, scripts/gen-autofill-vectors.py).
@Suite struct CPaceTests {
    struct Draft: Decodable {
        struct Case: Decodable {
            var input: String
            var output: String
        }
        struct LvCat: Decodable {
            var inputs: [String]
            var output: String
        }
        struct Transcript: Decodable {
            var Ya, ADa, Yb, ADb, output: String
        }
        struct Generator: Decodable {
            var PRS, CI, sid, generatorString, hash, u, g: String
        }
        struct Exchange: Decodable {
            var PRS, CI, sid, g, ya, ADa, Ya, yb, ADb, Yb, K, ISK_IR: String
        }
        struct LowOrder: Decodable {
            struct Point: Decodable {
                var u, q: String
                var abort: Bool
            }
            var s: String
            var points: [Point]
        }
        var source: String
        var prependLen: [Case]
        var lvCat: LvCat
        var transcriptIR: [Transcript]
        var generator: Generator
        var exchange: Exchange
        var lowOrder: LowOrder
    }

    struct MapVector: Decodable {
        var input: String
        var generator: String
    }

    static func fixture(_ name: String) throws -> Data {
        try Data(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("Fixtures/\(name)")
        )
    }

    static func bytes(_ hex: String) -> Data { Data(Hex.decode(hex)!) }
    static func hex(_ data: some Sequence<UInt8>) -> String { Hex.encode(data) }

    let draft: Draft

    init() throws {
        draft = try JSONDecoder().decode(Draft.self, from: Self.fixture("cpace-x25519-sha512.json"))
    }

    @Test func theStringFunctionsMatchTheDraft() {
        #expect(draft.source.contains("draft-irtf-cfrg-cpace-21"))
        for item in draft.prependLen {
            #expect(Self.hex(CPace.prependLength(Self.bytes(item.input))) == item.output)
        }
        #expect(Self.hex(CPace.lvCat(draft.lvCat.inputs.map(Self.bytes))) == draft.lvCat.output)
        for item in draft.transcriptIR {
            let transcript = CPace.transcript(
                Self.bytes(item.Ya),
                Self.bytes(item.ADa),
                Self.bytes(item.Yb),
                Self.bytes(item.ADb)
            )
            #expect(Self.hex(transcript) == item.output)
        }
    }

    @Test func theGeneratorMatchesTheDraftStepByStep() {
        let vector = draft.generator
        let generatorString = CPace.generatorString(
            prs: Self.bytes(vector.PRS),
            ci: Self.bytes(vector.CI),
            sid: Self.bytes(vector.sid)
        )
        #expect(Self.hex(generatorString) == vector.generatorString)
        let hash = Data(SHA512.hash(data: generatorString)).prefix(32)
        #expect(Self.hex(hash) == vector.hash)
        // decodeUCoordinate clears bit 255 (the hash's top bit here).
        #expect(Self.hex(Field25519(littleEndian: [UInt8](hash)).littleEndian) == vector.u)
        #expect(Self.hex(CPace.mapToCurve(Data(hash))) == vector.g)
        #expect(
            Self.hex(
                CPace.generator(prs: Self.bytes(vector.PRS), ci: Self.bytes(vector.CI), sid: Self.bytes(vector.sid))
            )
                == vector.g
        )
    }

    @Test func anExchangeMatchesTheDraftUpToTheISK() throws {
        let vector = draft.exchange
        let g = CPace.generator(prs: Self.bytes(vector.PRS), ci: Self.bytes(vector.CI), sid: Self.bytes(vector.sid))
        #expect(Self.hex(g) == vector.g)
        let ya = try #require(CPace.scalarMultiply(Self.bytes(vector.ya), g))
        let yb = try #require(CPace.scalarMultiply(Self.bytes(vector.yb), g))
        #expect(Self.hex(ya) == vector.Ya)
        #expect(Self.hex(yb) == vector.Yb)
        let kA = try #require(CPace.scalarMultiply(Self.bytes(vector.ya), yb))
        let kB = try #require(CPace.scalarMultiply(Self.bytes(vector.yb), ya))
        #expect(Self.hex(kA) == vector.K && kA == kB)
        let isk = CPace.intermediateSessionKey(
            sid: Self.bytes(vector.sid),
            k: kA,
            ya: ya,
            ada: Self.bytes(vector.ADa),
            yb: yb,
            adb: Self.bytes(vector.ADb)
        )
        #expect(Self.hex(isk) == vector.ISK_IR)
    }

    @Test func lowOrderPointsGiveTheNeutralElementAndAbort() throws {
        let low = draft.lowOrder
        #expect(low.points.count == 12 && low.points.filter(\.abort).count == 7)
        for point in low.points {
            let result = CPace.scalarMultiply(Self.bytes(low.s), Self.bytes(point.u))
            if point.abort {
                #expect(result == nil, "u = \(point.u) must abort")
            } else {
                // Non-canonical encodings (bit 255 set) are read with that bit cleared.
                #expect(result.map(Self.hex) == point.q, "u = \(point.u)")
            }
        }
        // Through the pairing: a low-order share from the other side is refused, not keyed.
        let context = PairingContext(
            code: "123456",
            request: "r",
            browser: "chromium",
            caller: "c",
            clientNonce: Data(count: 16),
            agentNonce: Data(repeating: 1, count: 16)
        )
        let agent = try PairingExchange(role: .agent, context: context, scalar: Data(repeating: 7, count: 32))
        for point in low.points where point.abort {
            #expect(throws: AutoFillError.self) { try agent.keys(otherShare: Self.bytes(point.u)) }
        }
    }

    @Test func theMapAgreesWithPythonOnEdgeCasesAndRandomInputs() throws {
        struct File: Decodable { var elligator2: [MapVector] }
        let vectors = try JSONDecoder().decode(File.self, from: Self.fixture("autofill-vectors.json")).elligator2
        #expect(vectors.count > 30)
        for vector in vectors {
            #expect(Self.hex(CPace.mapToCurve(Self.bytes(vector.input))) == vector.generator, "input \(vector.input)")
        }
    }

    @Test func theFieldInvertsAndTellsSquaresApart() {
        for seed in 1...20 {
            let bytes = [UInt8](SHA256.hash(data: Data("field \(seed)".utf8)))
            let x = Field25519(littleEndian: bytes)
            #expect((x * x.inverse).littleEndian == Field25519.one.littleEndian)
            #expect((x * x).legendre.littleEndian == Field25519.one.littleEndian)
            // 2 is not a square mod p, so 2x² is not either.
            let minusOne = (Field25519.zero - .one).littleEndian
            #expect((Field25519(2) * x * x).legendre.littleEndian == minusOne)
            #expect((x - x).littleEndian == [UInt8](repeating: 0, count: 32))
        }
    }
}
