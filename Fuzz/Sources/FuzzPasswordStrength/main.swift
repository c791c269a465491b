import Foundation

// SwiftPM renames an executable's entry point, so libFuzzer's own `main` cannot be used; start its
// driver explicitly instead.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafeRawPointer, Int) -> CInt
) -> CInt

var argc = CommandLine.argc
var argv = Optional(CommandLine.unsafeArgv)
let status = runFuzzerDriver(&argc, &argv) { fuzz($0, $1) }
exit(status)
