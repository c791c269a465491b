import Testing
import _KeyhavenSupport

/// Apple's shared-credential groups, the data both the audit and AutoFill read.
@Suite struct SharedCredentialGroupsTests {
    /// A `shared` group, a `from` → `to` migration read both ways, parents of a listed domain, and
    /// domains in no group.
    @Test func shippedGroups() throws {
        let groups = SharedCredentialGroups.shipped
        let safeway = try #require(groups.group(of: "safeway.com"))
        #expect(groups.group(of: "vons.com") == safeway)
        #expect(groups.group(of: "www.safeway.com") == safeway)
        #expect(groups.group(of: "WWW.Safeway.COM") == safeway)
        let hosting = try #require(groups.group(of: "hosting.com"))
        #expect(groups.group(of: "a2hosting.com") == hosting)
        #expect(hosting != safeway)
        #expect(groups.group(of: "example.com") == nil)
        #expect(groups.group(of: "com") == nil)
    }

    /// The file format: `shared` lists and `from`/`to` migrations; a domain keeps its first group.
    @Test func parsesTheFileFormat() throws {
        let groups = try SharedCredentialGroups(
            json: #"[{"shared": ["a.example", "b.example"]}, {"from": ["old.example"], "to": ["a.example"]}]"#
        )
        #expect(groups.group(of: "a.example") == 0)
        #expect(groups.group(of: "b.example") == 0)
        #expect(groups.group(of: "old.example") == 1)
        #expect(groups.group(of: "login.b.example") == 0)
        #expect(throws: (any Error).self) { try SharedCredentialGroups(json: "{}") }
    }
}
