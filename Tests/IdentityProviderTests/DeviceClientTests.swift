import Foundation
import IdentityProvider
import IdentityProviderServer
import OneTimeCodes
import Testing

/// Keyhaven's client of the device API: the provider's refusals arrive as codes the CLI acts on
/// (`keyhaven idp login` asks for the one-time code on `.secondFactorRequired`).
struct DeviceClientTests {
    @Test func refusalsHaveCodes() async throws {
        try await ProviderHarness.with { harness in
            let (_, secret) = try await harness.provider.createUser(
                email: "grace@example.com",
                password: "grace's password",
                totp: true
            )
            let totp = try TOTP(secret: try #require(secret))
            let client = ProviderDeviceClient()
            @Sendable func login(_ password: String, code: String? = nil) async throws -> String {
                try await client.login(
                    baseURL: harness.baseURL,
                    email: "grace@example.com",
                    password: password,
                    code: code,
                    name: "tests"
                ).token
            }
            await #expect(throws: ProviderDeviceClient.Failure(.secondFactorRequired, "")) {
                try await login("grace's password")
            }
            await #expect(throws: ProviderDeviceClient.Failure(.invalidCredentials, "")) {
                try await login("not grace's password")
            }
            #expect(try await !login("grace's password", code: totp.code(at: Date())).isEmpty)
            await #expect(throws: ProviderDeviceClient.Failure(.notAProvider, "")) {
                try await client.discover(harness.baseURL + "/nowhere")
            }
        }
    }
}
