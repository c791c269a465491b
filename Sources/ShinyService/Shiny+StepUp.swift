import AccountModification
import AccountModificationKit
import Foundation
import HTTPTypes
import Hummingbird
import OneTimeCodes
import _KeyhavenSupport
import _KeyhavenWeb

extension Shiny {
    /// The step-up page Keyhaven opens for TOTP accounts. Its codes count against the account's
    /// guessing limit (opening new requests does not reset it), and five wrong ones end the request.
    func addStepUp(to router: Router<ShinyRequestContext>) {
        router.get("/account-modification/step-up/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            guard let pending = await self.stepUps.get(id) else {
                return Self.html(ShinyPages.notFound(), status: .notFound)
            }
            return self.formPage(request) { ShinyPages.stepUp(id: id, user: pending.user.name, csrf: $0) }
        }
        postForm("/account-modification/step-up/:id", to: router) { request, context, form in
            let id = context.parameters.get("id") ?? ""
            let csrf = form["csrf"] ?? ""
            guard let pending = await self.stepUps.get(id), let modification = await self.kit.context(for: id) else {
                return Self.html(ShinyPages.notFound(), status: .notFound)
            }
            let keys = self.throttle.keys(account: pending.user.name, address: Self.clientAddress(context))
            do throws(ShinyThrottle.Locked) {
                try self.throttle.charge(keys)
            } catch {
                return Self.tooMany(error) { ShinyPages.stepUp(id: id, user: pending.user.name, csrf: csrf, error: $0) }
            }
            guard (try? self.store.useCode(form["code"] ?? "", for: pending.user)) == true else {
                if await self.stepUps.failedAttempt(id) >= 5 {
                    await self.stepUps.close(id)
                    await modification.cancelRequest(
                        withError: .init(code: .failed, localizedFailureReason: "Too many wrong authenticator codes.")
                    )
                    return Self.html(
                        ShinyPages.stepUpDone("Too many wrong codes: nothing was changed.", success: false)
                    )
                }
                return Self.html(
                    ShinyPages.stepUp(id: id, user: pending.user.name, csrf: csrf, error: "That code is not right."),
                    status: .unauthorized
                )
            }
            self.throttle.refund(keys, succeeded: true)
            await self.stepUps.close(id)
            switch pending.action {
            case .changePassword(let newPassword):
                await self.kit.extension.apply(newPassword, user: pending.user, context: modification)
                return Self.html(ShinyPages.stepUpDone("Your password was changed.", success: true))
            case .convertToSignIn:
                // The rest needs Keyhaven's authorization: finish without holding the page.
                let shinyExtension = self.kit.extension
                Task { await shinyExtension.convert(pending.user, context: modification) }
                return Self.html(
                    ShinyPages.stepUpDone(
                        "Confirmed: Keyhaven finishes the switch to Sign in with Keyhaven.",
                        success: true
                    )
                )
            }
        }
        postForm("/account-modification/step-up/:id/cancel", to: router) { _, context, _ in
            let id = context.parameters.get("id") ?? ""
            guard await self.stepUps.get(id) != nil, let modification = await self.kit.context(for: id) else {
                return Self.html(ShinyPages.notFound(), status: .notFound)
            }
            await self.stepUps.close(id)
            await modification.cancelRequest(withError: .init(code: .userCanceled))
            return Self.html(ShinyPages.stepUpDone("Cancelled: nothing was changed.", success: false))
        }
    }
}
