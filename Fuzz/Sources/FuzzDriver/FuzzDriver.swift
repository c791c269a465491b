import Foundation

// SwiftPM renames an executable's entry point, so libFuzzer's own `main` cannot be used; its driver
// is started explicitly instead. Every fuzz target's `main.swift` is one call to `runFuzzer`.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafeRawPointer, Int) -> CInt
) -> CInt

/// The target's entry: the C callback libFuzzer calls cannot capture, so it reads this.
nonisolated(unsafe) private var currentTarget: ((UnsafeRawPointer, Int) -> CInt)?

/// Runs libFuzzer over `fuzz` with the process's arguments, and exits with its status.
///
/// `KEYHAVEN_FUZZ_SEEDS=DIR target` writes the target's generated seed inputs (if it has any) into
/// DIR and exits: scripts/fuzz.sh seeds corpora with it where no test fixture has the input's shape.
public func runFuzzer(seeds: () -> [[UInt8]], _ fuzz: @escaping (UnsafeRawPointer, Int) -> CInt) -> Never {
    if let directory = ProcessInfo.processInfo.environment["KEYHAVEN_FUZZ_SEEDS"] {
        for (number, seed) in seeds().enumerated() {
            let path = "\(directory)/generated-\(number)"
            guard FileManager.default.createFile(atPath: path, contents: Data(seed)) else {
                FileHandle.standardError.write(Data("could not write the seed \(path)\n".utf8))
                exit(1)
            }
        }
        exit(0)
    }
    currentTarget = fuzz
    var argc = CommandLine.argc
    var argv = Optional(CommandLine.unsafeArgv)
    exit(runFuzzerDriver(&argc, &argv) { currentTarget!($0, $1) })
}
