/// A strict RFC 4180 reader that localizes damage: every record carries the physical line it
/// starts on, and a malformed record (a quote inside an unquoted field, junk after a closing quote,
/// invalid UTF-8) is reported on its own while the records after it are still read.
///
/// Records end at LF or CRLF outside quotes; quoted fields may span lines; `""` is a quote inside a
/// quoted field. A UTF-8 byte-order mark is skipped. Blank lines are ignored. Each record is
/// decoded as UTF-8 separately, so one bad row cannot fail a file.
struct CSVReader {
    enum Problem: String, Sendable {
        case bareQuote = "bare-quote"
        case textAfterClosingQuote = "text-after-closing-quote"
        case unterminatedQuote = "unterminated-quote"
        case invalidUTF8 = "invalid-utf8"
        /// More fields than the header has, plus one: the rest are not kept (a line of millions of
        /// commas must not cost gigabytes).
        case tooManyFields = "too-many-fields"
    }

    /// Fields kept for the header line; later records keep at most the header's count plus one.
    static let maximumHeaderFields = 1_024

    struct Record: Sendable {
        /// 1-based physical line the record starts on.
        var line: Int
        var fields: [String]
        var problem: Problem?
    }

    static func records(_ bytes: [UInt8]) -> [Record] {
        var records: [Record] = []
        var index = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        var line = 1
        let quote = UInt8(ascii: "\"")
        let comma = UInt8(ascii: ",")
        let newline = UInt8(ascii: "\n")
        let carriageReturn = UInt8(ascii: "\r")

        while index < bytes.count {
            // Skip blank lines between records.
            if bytes[index] == newline {
                line += 1
                index += 1
                continue
            }
            if bytes[index] == carriageReturn && index + 1 < bytes.count && bytes[index + 1] == newline {
                line += 1
                index += 2
                continue
            }
            let startLine = line
            let fieldLimit = records.first.map { $0.fields.count + 1 } ?? maximumHeaderFields
            var fields: [[UInt8]] = []
            var field: [UInt8] = []
            var problem: Problem?
            var atFieldStart = true
            var inQuotes = false
            var afterClosingQuote = false
            var recordEnded = false

            while index < bytes.count && !recordEnded {
                let byte = bytes[index]
                if inQuotes {
                    if byte == quote {
                        if index + 1 < bytes.count && bytes[index + 1] == quote {
                            field.append(quote)
                            index += 2
                            continue
                        }
                        inQuotes = false
                        afterClosingQuote = true
                        index += 1
                        continue
                    }
                    if byte == newline { line += 1 }
                    field.append(byte)
                    index += 1
                    continue
                }
                switch byte {
                case comma:
                    if fields.count < fieldLimit {
                        fields.append(field)
                    } else {
                        problem = problem ?? .tooManyFields
                    }
                    field = []
                    atFieldStart = true
                    afterClosingQuote = false
                    index += 1
                case newline:
                    recordEnded = true
                    line += 1
                    index += 1
                case carriageReturn where index + 1 < bytes.count && bytes[index + 1] == newline:
                    recordEnded = true
                    line += 1
                    index += 2
                case quote where atFieldStart:
                    inQuotes = true
                    atFieldStart = false
                    index += 1
                default:
                    if afterClosingQuote {
                        problem = problem ?? .textAfterClosingQuote
                    } else if byte == quote {
                        problem = problem ?? .bareQuote
                    }
                    field.append(byte)
                    atFieldStart = false
                    index += 1
                }
            }
            if inQuotes {
                problem = problem ?? .unterminatedQuote
            }
            if fields.count < fieldLimit {
                fields.append(field)
            } else {
                problem = problem ?? .tooManyFields
            }

            var decoded: [String] = []
            decoded.reserveCapacity(fields.count)
            for bytes in fields {
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    problem = problem ?? .invalidUTF8
                    decoded.append("")
                    continue
                }
                decoded.append(text)
            }
            records.append(Record(line: startLine, fields: decoded, problem: problem))
        }
        return records
    }
}
