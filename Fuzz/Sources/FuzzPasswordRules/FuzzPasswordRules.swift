import Foundation
import PasswordRules

/// One fuzz input: arbitrary bytes as a rule string.
///
/// Checks more than "does not crash": the parser must never trap, the display form must be stable
/// under re-parsing (except for the two documented cases), and validation and generation must work on
/// whatever the parser produced.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let text = String(decoding: bytes, as: UTF8.self)
    let display = PasswordRules.parse(text, view: .display)
    let generator = PasswordRules.parse(text, view: .generator)

    let canonical = display.rules.description
    let again = PasswordRules.canonical(canonical)
    let dashBug = display.diagnostics.contains { $0.code == .displayDropsDash }
    let emptyRequired = display.rules.required.contains { $0.isEmpty }
    if !dashBug && !emptyRequired && again != canonical {
        fatalError("display form is not a fixed point")
    }

    _ = generator.rules.validate(text)
    if generator.rules.maxLength ?? 0 <= 256, generator.rules.minLength ?? 0 <= 256,
        let passwordGenerator = try? PasswordGenerator(rules: generator.rules),
        let password = try? passwordGenerator.generate()
    {
        let report = generator.rules.validate(password)
        if !report.isValid {
            fatalError("generated password fails its own rules: \(report)")
        }
    }
    return 0
}

/// No generated seeds: scripts/fuzz.sh seeds this target from the test fixtures.
func seeds() -> [[UInt8]] { [] }
