import NIOCore
import NIOPosix
import OneTimeCodes

/// scrypt (``PasswordHash``, about 90 ms and 32 MiB at the default cost) on threads of its own:
/// never on an NIO event loop (which `keyhaven idp serve` also runs Swift concurrency on) nor on
/// the cooperative pool, where a burst of sign-ins would stall every other request.
///
/// The pool's size is the cap on concurrent hashes (one per core, at most 4, shared by every
/// provider in the process); further sign-ins wait their turn without holding a thread.
struct PasswordHashing: Sendable {
    let pool: NIOThreadPool

    static let shared: PasswordHashing = {
        let pool = NIOThreadPool(numberOfThreads: min(4, max(1, System.coreCount)))
        pool.start()  // for the life of the process
        return PasswordHashing(pool: pool)
    }()

    func verify(_ password: String, against encoded: String) async throws -> Bool {
        try await pool.runIfActive { PasswordHash.verify(password, against: encoded) }
    }

    func make(_ password: String, logN: Int) async throws -> String {
        try await pool.runIfActive { try PasswordHash.make(password, logN: logN) }
    }
}

extension IdentityProvider {
    var passwordHashing: PasswordHashing { .shared }
}
