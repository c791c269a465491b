import Foundation
import PasswordStrength

/// One fuzz input: arbitrary bytes as a password (decoded as UTF-8 with replacement), the first
/// byte also choosing whether to add a user input built from the rest.
///
/// Beyond "no crash": the estimate must be internally consistent — a score in 0...4 that agrees
/// with the guesses, finite non-negative guesses, and a match sequence that covers the scored
/// characters exactly once, in order.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    let password = String(decoding: bytes, as: UTF8.self)
    let userInputs = bytes.first.map { $0 & 1 == 1 ? [String(password.prefix(8))] : [] } ?? []
    let estimate = StrengthEstimator.shared.estimate(password, userInputs: userInputs)

    guard (0...4).contains(estimate.score), estimate.guesses.isFinite, estimate.guesses >= 1 else {
        fatalError("inconsistent estimate: score \(estimate.score), guesses \(estimate.guesses)")
    }
    guard StrengthEstimator.score(guesses: estimate.guesses) == estimate.score else {
        fatalError("score does not follow from guesses")
    }
    var next = 0
    for match in estimate.sequence {
        guard match.i == next, match.j >= match.i, match.guesses >= 1 else {
            fatalError("sequence does not tile the password at \(match.i)")
        }
        next = match.j + 1
    }
    if !estimate.sequence.isEmpty && next != estimate.scoredLength {
        fatalError("sequence ends at \(next), scored \(estimate.scoredLength)")
    }
    return 0
}

/// No generated seeds: scripts/fuzz.sh seeds this target from the test fixtures.
func seeds() -> [[UInt8]] { [] }
