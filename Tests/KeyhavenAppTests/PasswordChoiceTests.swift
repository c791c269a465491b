import AccountModification
import Foundation
import KeyhavenApp
import PasswordRules
import Testing

/// Which rules an upgrade's new password follows: the service's manifest first, then Apple's
/// published quirk for the domain, then Apple's own format.
struct PasswordChoiceTests {
    static func manifest(_ requirements: String?) -> AccountModificationManifest {
        AccountModificationManifest(
            endpoint: "https://service.example/account-modification",
            supportsStrongPasswordChange: true,
            supportsUpgradeToSignIn: false,
            passwordGenerationRequirements: requirements
        )
    }

    static func isAppleFormat(_ password: String) -> Bool {
        password.wholeMatch(of: #/[a-zA-Z0-9]{6}-[a-zA-Z0-9]{6}-[a-zA-Z0-9]{6}/#) != nil
    }

    @Test func theManifestsRequirementsComeFirst() throws {
        let text = "minlength: 30; maxlength: 30; required: digit; allowed: [abc];"
        let rules = PasswordRules(text)
        // airfrance.com has a quirk of its own (at most 12 characters); the manifest wins.
        for _ in 0..<50 {
            let password = try UpgradeService.generatePassword(
                manifest: Self.manifest(text),
                service: "https://www.airfrance.com"
            )
            #expect(rules.validate(password).isValid, "\(password)")
            #expect(password.count == 30)
            #expect(password.allSatisfy { "abc0123456789".contains($0) })
        }
    }

    @Test func withoutRequirementsTheDomainsQuirkApplies() throws {
        let quirk = try #require(PasswordRulesQuirks.shared.rules(forDomain: "https://www.airfrance.com"))
        for _ in 0..<50 {
            let password = try UpgradeService.generatePassword(
                manifest: Self.manifest(nil),
                service: "https://www.airfrance.com"
            )
            #expect(quirk.rules.validate(password).isValid, "\(password)")
            #expect(password.count <= 12)
            #expect(!Self.isAppleFormat(password))
        }
    }

    @Test func otherwiseApplesFormat() throws {
        for requirements in [nil, ""] {
            let password = try UpgradeService.generatePassword(
                manifest: Self.manifest(requirements),
                service: "https://no-quirk.example"
            )
            #expect(Self.isAppleFormat(password), "\(password)")
        }
    }

    @Test func requirementsThatCannotBeMetAreAnError() {
        #expect(throws: (any Error).self) {
            try UpgradeService.generatePassword(
                manifest: Self.manifest("minlength: 20; maxlength: 10;"),
                service: "https://no-quirk.example"
            )
        }
    }
}
