/// Why a breach check or index operation failed. Never contains a password or a full hash.
public struct BreachError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case notAnIndex, truncated, corrupt, unsupportedVersion, needsFullIndex, io, offline, badResponse
            case invalidInput
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// The file is not a Keyhaven breach index.
        public static let notAnIndex = Code(.notAnIndex)
        /// The index is shorter than its header says.
        public static let truncated = Code(.truncated)
        /// The index's header or tables contradict each other or the file (damaged or crafted).
        public static let corrupt = Code(.corrupt)
        /// A newer index format.
        public static let unsupportedVersion = Code(.unsupportedVersion)
        /// The operation needs full hashes (range serving) but the index is compact.
        public static let needsFullIndex = Code(.needsFullIndex)
        /// Reading or writing a file failed.
        public static let io = Code(.io)
        /// The range API could not be reached.
        public static let offline = Code(.offline)
        /// The range API answered with an error or garbage.
        public static let badResponse = Code(.badResponse)
        /// Invalid input (a malformed hash, an empty corpus…).
        public static let invalidInput = Code(.invalidInput)
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
