import Passkeys
import Testing
import _KeyhavenSupport

/// CBOR against RFC 8949's Appendix A examples (the ones WebAuthn can meet), CTAP2's canonical
/// encoding, and strict refusals of what an authenticator or relying party must never accept.
@Suite struct CBORTests {
    static func bytes(_ hex: String) -> [UInt8] { Hex.decode(hex)! }

    static let vectors: [(String, CBOR)] = [
        ("00", .unsigned(0)), ("01", .unsigned(1)), ("0a", .unsigned(10)), ("17", .unsigned(23)),
        ("1818", .unsigned(24)), ("1819", .unsigned(25)), ("1864", .unsigned(100)), ("1903e8", .unsigned(1000)),
        ("1a000f4240", .unsigned(1_000_000)), ("1b000000e8d4a51000", .unsigned(1_000_000_000_000)),
        ("1bffffffffffffffff", .unsigned(.max)), ("20", CBOR(-1)), ("29", CBOR(-10)), ("3863", CBOR(-100)),
        ("3903e7", CBOR(-1000)), ("f4", .bool(false)), ("f5", .bool(true)), ("f6", .null), ("f7", .undefined),
        ("40", .bytes([])), ("4401020304", .bytes([1, 2, 3, 4])), ("60", .text("")), ("6161", .text("a")),
        ("6449455446", .text("IETF")), ("62c3bc", .text("\u{00fc}")), ("63e6b0b4", .text("\u{6c34}")),
        ("80", .array([])), ("83010203", .array([CBOR(1), CBOR(2), CBOR(3)])),
        ("8301820203820405", .array([CBOR(1), .array([CBOR(2), CBOR(3)]), .array([CBOR(4), CBOR(5)])])),
        ("a0", .map([])), ("a201020304", .map([.init(CBOR(1), CBOR(2)), .init(CBOR(3), CBOR(4))])),
        (
            "a26161016162820203",
            .map([.init(.text("a"), CBOR(1)), .init(.text("b"), .array([CBOR(2), CBOR(3)]))])
        ),
        ("c11a514b67b0", .tagged(1, .unsigned(1_363_896_240))),
    ]

    @Test func theRFCsExamplesDecodeAndEncodeBack() throws {
        for (hex, item) in Self.vectors {
            #expect(try CBOR.decode(Self.bytes(hex)) == item, "\(hex)")
            #expect(Hex.encode(item.encoded()) == hex, "\(hex)")
        }
    }

    @Test func floatsOfEveryWidthDecode() throws {
        #expect(try CBOR.decode(Self.bytes("f93e00")) == .float(1.5))
        #expect(try CBOR.decode(Self.bytes("f97bff")) == .float(65504))
        #expect(try CBOR.decode(Self.bytes("f90001")) == .float(5.960464477539063e-8))
        #expect(try CBOR.decode(Self.bytes("f97c00")) == .float(.infinity))
        #expect(try CBOR.decode(Self.bytes("fa47c35000")) == .float(100_000))
        #expect(try CBOR.decode(Self.bytes("fb3ff199999999999a")) == .float(1.1))
        #expect(try CBOR.decode(Self.bytes("f98000")) == .float(-0.0))
    }

    @Test func mapsAreWrittenInCTAP2sCanonicalOrder() {
        // A COSE EC2 key written in another order: kty 1, alg 3, crv -1, x -2, y -3.
        let key = CBOR.map([
            .init(CBOR(-3), .bytes([3])), .init(CBOR(1), CBOR(2)), .init(CBOR(-1), CBOR(1)),
            .init(CBOR(3), CBOR(-7)), .init(CBOR(-2), .bytes([2])),
        ])
        #expect(Hex.encode(key.encoded()) == "a5010203262001214102224103")
        let texts = CBOR.map([.init(.text("bb"), CBOR(1)), .init(.text("a"), CBOR(2)), .init(CBOR(10), CBOR(3))])
        #expect(Hex.encode(texts.encoded()) == "a30a0361610262626201")
    }

    @Test func aPrefixReportsWhatItTook() throws {
        let (item, consumed) = try CBOR.decodePrefix(Self.bytes("a201020304ff00"))
        #expect(item[1] == CBOR(2) && item[3]?.int == 4)
        #expect(consumed == 5)
    }

    @Test func malformedInputIsRefusedWithItsReason() {
        func code(_ hex: String, depth: Int = 16) -> CBORError.Code? {
            do {
                _ = try CBOR.decode(Self.bytes(hex), maximumDepth: depth)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code("") == .truncated)
        #expect(code("1a0001") == .truncated)
        #expect(code("4401") == .truncated)
        // A length claiming more than is there is refused before anything is allocated.
        #expect(code("5bffffffffffffffff") == .truncated)
        #expect(code("9bffffffffffffffff") == .truncated)
        #expect(code("bbffffffffffffffff") == .truncated)
        #expect(code("0000") == .trailingBytes)
        #expect(code("5f42010243030405ff") == .unsupported)  // indefinite length
        #expect(code("1c") == .unsupported)  // reserved
        #expect(code("ff") == .unsupported)  // a break out of place
        #expect(code("62c328") == .invalidText)
        #expect(code("a201020103") == .duplicateKey)
        // Keys are compared as written canonically: two maps with the same pairs in another order
        // are one key (FuzzCBOR found this: such input re-encoded into a map with a duplicate key).
        #expect(code("a2" + "a2010203040a" + "a2030401020b") == .duplicateKey)
        #expect(code("a2f98000" + "01" + "f90000" + "02") == nil)  // -0.0 and 0.0 differ
        #expect(code(String(repeating: "81", count: 20) + "00") == .tooDeep)
        #expect(code("818100", depth: 1) == .tooDeep)
        #expect(code("818100", depth: 2) == nil)
    }

    @Test func lookupsByIntegerAndTextKeys() throws {
        let item = try CBOR.decode(Self.bytes("a30161612061626568656c6c6f4101"))
        #expect(item[1]?.string == "a")
        #expect(item[-1]?.string == "b")
        #expect(item["hello"]?.byteString == [1])
        #expect(item[2] == nil)
        #expect(CBOR(Int.min).int == Int.min && CBOR(Int.max).int == Int.max)
        #expect(CBOR.negative(.max).int == nil)
    }
}
