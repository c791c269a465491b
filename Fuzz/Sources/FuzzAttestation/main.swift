import Foundation

// SwiftPM renames an executable's entry point, so libFuzzer's own `main` cannot be used; start its
// driver explicitly instead.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafeRawPointer, Int) -> CInt
) -> CInt

// `KEYHAVEN_FUZZ_SEEDS=DIR target` writes the target's generated seed inputs (if it has any) into
// DIR and exits: scripts/fuzz.sh seeds corpora with it where no test fixture has the input's shape.
if let directory = ProcessInfo.processInfo.environment["KEYHAVEN_FUZZ_SEEDS"] {
    for (number, seed) in seeds().enumerated() {
        FileManager.default.createFile(atPath: "\(directory)/generated-\(number)", contents: Data(seed))
    }
    exit(0)
}

var argc = CommandLine.argc
var argv = Optional(CommandLine.unsafeArgv)
let status = runFuzzerDriver(&argc, &argv) { fuzz($0, $1) }
exit(status)
