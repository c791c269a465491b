import Testing
import _KeyhavenSupport

/// Two domains made here, as a module makes its own: the shape (equality, hash, descriptions,
/// location, details) is the generic's, whatever the domain.
enum SampleErrorDomain: KeyhavenErrorDomain {}
typealias SampleError = KeyhavenError<SampleErrorDomain>

extension SampleError.Code {
    static var first: Self { Self("first") }
    static var second: Self { Self("second") }
}

enum CodedSampleErrorDomain: KeyhavenErrorDomain {
    typealias Details = Int
    static var errorName: String { "Outer.Coded" }
    static var descriptionIncludesCode: Bool { true }
}
typealias CodedSampleError = KeyhavenError<CodedSampleErrorDomain>

extension CodedSampleError.Code {
    static var first: Self { Self("first") }
}

@Suite struct KeyhavenErrorTests {
    /// Errors compare by code alone: a test builds the error it expects without its message,
    /// details or location.
    @Test func equalityIsByCodeAlone() {
        let thrown = SampleError(.first, "the first thing went wrong")
        #expect(thrown == SampleError(.first, ""))
        #expect(thrown != SampleError(.second, "the first thing went wrong"))
        #expect(CodedSampleError(.first, "a", details: 1) == CodedSampleError(.first, "b", details: 2))
        #expect(SampleError.Code.first == SampleError.Code.first)
        #expect(SampleError.Code.first != SampleError.Code.second)
    }

    /// Hashing agrees with equality: a set keeps one error per code.
    @Test func hashIsByCodeAlone() {
        let errors: Set = [SampleError(.first, "one"), SampleError(.first, "two"), SampleError(.second, "three")]
        #expect(errors.count == 2)
        #expect(errors.contains(SampleError(.second, "")))
        #expect(SampleError(.first, "x").hashValue == SampleError(.first, "y").hashValue)
    }

    /// `description` is what a person reads: the message (or `code: message` where the domain
    /// says so), never the location; `debugDescription` has all of it.
    @Test func descriptionsSayWhatAndDebugSaysWhere() {
        let error = SampleError(.first, "the vault is locked")
        #expect(error.description == "the vault is locked")
        #expect("\(error)" == "the vault is locked")
        #expect(!error.description.contains("KeyhavenErrorTests"))
        let line = #line + 1
        let coded = CodedSampleError(.first, "refused", details: 7)
        #expect(coded.description == "first: refused")
        #expect(coded.code.description == "first" && coded.code.name == "first")
        #expect(
            coded.debugDescription
                == "Outer.Coded.first: refused (_KeyhavenSupportTests/KeyhavenErrorTests.swift:\(line))"
        )
        #expect(String(reflecting: error).hasPrefix("SampleError.first: the vault is locked (_KeyhavenSupportTests/"))
    }

    /// The location is where the error was made (`#fileID`, `#line`), or what a helper passes on.
    @Test func locationIsWhereTheErrorWasMade() {
        let line = #line + 1
        let error = SampleError(.first, "here")
        #expect(
            error.location == ErrorLocation("_KeyhavenSupportTests/KeyhavenErrorTests.swift", UInt(line))
        )
        #expect(error.location.description == "_KeyhavenSupportTests/KeyhavenErrorTests.swift:\(line)")
        func helper(line: UInt = #line) -> SampleError { SampleError(.second, "from a helper", line: line) }
        let callerLine = #line + 1
        let fromHelper = helper()
        #expect(fromHelper.location.line == UInt(callerLine))
        #expect(fromHelper.location.fileID == "_KeyhavenSupportTests/KeyhavenErrorTests.swift")
    }

    /// Details are typed by domain and optional; a domain without any leaves them `Never`.
    @Test func detailsAreTypedByDomain() {
        #expect(CodedSampleError(.first, "x", details: 42).details == 42)
        #expect(CodedSampleError(.first, "x").details == nil)
        #expect(SampleError(.first, "x").details == nil)
    }

    /// Errors are matched by code after a typed or untyped throw.
    @Test func errorsAreMatchedByCode() {
        func fail() throws(SampleError) { throw SampleError(.second, "no") }
        #expect(throws: SampleError(.second, "")) { try fail() }
        do {
            try fail()
        } catch {
            #expect(error.code == .second)
            switch error.code {
            case .first: Issue.record("matched the wrong code")
            case .second: break
            default: Issue.record("matched no code")
            }
        }
        let untyped: any Error = SampleError(.first, "x")
        #expect((untyped as? SampleError)?.code == .first)
        #expect(!(untyped is CodedSampleError))
    }

    /// The domain's name is its type name without `Domain`, unless it names itself.
    @Test func domainNames() {
        #expect(SampleErrorDomain.errorName == "SampleError")
        #expect(CodedSampleErrorDomain.errorName == "Outer.Coded")
        #expect(!SampleErrorDomain.descriptionIncludesCode)
    }
}
