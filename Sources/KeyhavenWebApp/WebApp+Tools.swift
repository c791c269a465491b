import AutoFill
import Foundation
import HTTPTypes
import Hummingbird
import KeyhavenApp
import NIOCore
import OneTimeCodes
import PasswordRules
import PasswordStrength
import Synchronization
import Vault
import _KeyhavenSupport
import _KeyhavenWeb

extension WebApp {
    func addToolRoutes(to router: Router<WebAppContext>) {
        router.get("/generator") { request, context -> Response in
            _ = try await self.requireVault()
            let query = Self.query(request)
            let generated = Self.generate(
                length: query["length"] ?? "",
                rules: query["rules"] ?? "",
                domain: query["domain"] ?? ""
            )
            return Self.html(WebAppPages.generator(generated, session: context.page))
        }
        router.get("/import") { _, context -> Response in
            _ = try await self.requireVault()
            return Self.html(WebAppPages.transfer(session: context.page, flash: self.flash(context)))
        }
        router.post("/import") { request, context -> Response in
            let vault = try await self.requireVault()
            let body = try await request.body.collect(upTo: ImportService.maximumFileSize + (64 << 10))
            guard let boundary = MultipartForm.boundary(contentType: request.headers[.contentType]),
                let form = MultipartForm.parse(Array(body.readableBytesView), boundary: boundary)
            else { throw WebAppError(.badRequest, "The upload could not be read: choose the file again.") }
            guard CSRF.matches(form.text("csrf"), context.csrf) else { throw WebAppError.staleForm }
            guard let file = form["file"], !file.body.isEmpty else {
                return Self.html(
                    WebAppPages.transfer(session: context.page, flash: nil, error: "Choose a file to import."),
                    status: .badRequest
                )
            }
            let formatName = form.text("format") ?? ""
            let format = formatName.isEmpty ? nil : ImportFormat(rawValue: formatName)
            let preview: ImportPreview
            do {
                preview = try await self.blocking {
                    let parsed = try ImportService.read(file.body, format: format)
                    let report = try ImportService(vault: vault).preview(parsed)
                    return ImportPreview(
                        parsed: parsed,
                        report: report,
                        fileName: file.fileName ?? "The file",
                        created: self.now
                    )
                }
            } catch let error as VaultError {
                return Self.html(
                    WebAppPages.transfer(
                        session: context.page,
                        flash: nil,
                        error: "Nothing was imported: \(error.message)"
                    ),
                    status: .badRequest
                )
            }
            let id = self.newID()
            self.state.withLock { state in
                let now = self.now
                state.previews = state.previews.filter { now.timeIntervalSince($0.value.created) < 3600 }
                state.previews[id] = preview
            }
            return Self.html(WebAppPages.importPreview(id: id, preview, session: context.page))
        }
        router.post("/import/{id}/confirm") { request, context -> Response in
            _ = try await self.form(request, context, only: ["csrf"])
            let vault = try await self.requireVault()
            let id = context.parameters.get("id") ?? ""
            guard let preview = self.state.withLock({ $0.previews.removeValue(forKey: id) }) else {
                throw WebAppError(.notFound, "This import was done or cancelled already.")
            }
            let report = try await self.blocking { try ImportService(vault: vault).run(preview.parsed) }
            try await self.vaultChanged()
            self.say(
                context,
                "Imported \(report.imported) credentials; \(report.duplicatesMerged) were in the vault already."
                    + (report.passkeys > 0 ? " \(report.passkeys) passkeys added." : "")
            )
            return Self.redirect(context.path("/vault"))
        }
        router.post("/import/{id}/cancel") { request, context -> Response in
            _ = try await self.form(request, context, only: ["csrf"])
            _ = self.state.withLock { $0.previews.removeValue(forKey: context.parameters.get("id") ?? "") }
            self.say(context, "Cancelled: nothing was imported.")
            return Self.redirect(context.path("/import"))
        }
        router.post("/export") { request, context -> Response in
            let form = try await self.form(request, context)
            let vault = try await self.requireVault()
            guard let format = ExportFormat(rawValue: form["format"] ?? "") else {
                throw WebAppError(.badRequest, "Choose an export format.")
            }
            guard form["understood"] == "1" else {
                return Self.html(
                    WebAppPages.transfer(
                        session: context.page,
                        flash: nil,
                        error: "Confirm that you understand the file holds your passwords unencrypted."
                    ),
                    status: .badRequest
                )
            }
            let data = try await self.blocking {
                let listing = try vault.list()
                var history: [CredentialID: [PasswordHistoryEntry]] = [:]
                for credential in listing.credentials { history[credential.id] = try vault.history(credential.id) }
                return try Exporter.export(
                    listing.credentials,
                    history: history,
                    passkeys: try vault.passkeys(),
                    format: format,
                    now: self.now
                )
            }
            let (name, type) =
                switch format {
                case .csv: ("keyhaven-export.csv", "text/csv; charset=utf-8")
                case .bitwardenJSON: ("keyhaven-export-bitwarden.json", "application/json")
                case .cxf: ("keyhaven-export-cxf.json", "application/json")
                case .keepassXML: ("keyhaven-export-keepass.xml", "application/xml")
                }
            return Response(
                status: .ok,
                headers: [
                    .contentType: type, .contentDisposition: "attachment; filename=\"\(name)\"",
                ],
                body: .init(byteBuffer: ByteBuffer(bytes: data))
            )
        }
        router.get("/pairing") { _, context -> Response in
            _ = try await self.requireVault()
            let pairings = try await self.agent.pairings()
            let code = await self.agent.waitForPairingCode(timeout: 0)
            return Self.html(
                WebAppPages.pairing(
                    pairings: pairings.sorted { $0.created > $1.created },
                    code: code,
                    session: context.page,
                    flash: self.flash(context)
                )
            )
        }
        router.post("/pairing/{id}/revoke") { request, context -> Response in
            _ = try await self.form(request, context, only: ["csrf"])
            _ = try await self.requireVault()
            let id = context.parameters.get("id") ?? ""
            try await self.agent.revokePairing(id)
            self.say(context, "Revoked: that browser can no longer fill from Keyhaven.")
            return Self.redirect(context.path("/pairing"))
        }
        router.get("/settings") { _, context -> Response in
            let vault = try await self.requireVault()
            let settings = try await self.settings(vault)
            return Self.html(
                WebAppPages.settings(
                    settings,
                    idleLockMinutes: await self.idleLockMinutes,
                    session: context.page,
                    flash: self.flash(context)
                )
            )
        }
        router.post("/settings") { request, context -> Response in
            let form = try await self.form(request, context)
            let vault = try await self.requireVault()
            var settings = WebSettings()
            let idleMinutes = await self.idleLockMinutes
            let refuse = { (message: String) -> Response in
                Self.html(
                    WebAppPages.settings(
                        settings,
                        idleLockMinutes: idleMinutes,
                        session: context.page,
                        flash: nil,
                        error: message
                    ),
                    status: .badRequest
                )
            }
            settings.breachSource = WebSettings.BreachSource(rawValue: form["breachSource"] ?? "") ?? .automatic
            settings.breachIndexPath = (form["breachIndexPath"] ?? "").trimmingCharacters(in: .whitespaces)
            settings.breachAPI = (form["breachAPI"] ?? "").trimmingCharacters(in: .whitespaces)
            settings.contactServices = form["contactServices"] == "1"
            guard let minutes = Int(form["idleLockMinutes"] ?? ""), (0...1440).contains(minutes) else {
                return refuse("The idle lock is a number of minutes from 0 (never) to 1440.")
            }
            if settings.breachSource == .index && !FileManager.default.fileExists(atPath: settings.breachIndexPath) {
                return refuse("There is no breach index at that path.")
            }
            if settings.breachSource == .api {
                guard let url = URL(string: settings.breachAPI), ["http", "https"].contains(url.scheme ?? ""),
                    url.host != nil
                else { return refuse("The range API must be an http(s) URL.") }
            }
            try await self.saveSettings(settings, vault)
            try await self.session.setIdleLock(minutes == 0 ? .infinity : TimeInterval(minutes * 60))
            self.say(context, "Saved.")
            return Self.redirect(context.path("/settings"))
        }
    }

    var idleLockMinutes: Int {
        get async {
            let seconds = await session.idleLockSeconds
            return seconds.isFinite ? Int((seconds / 60).rounded()) : 0
        }
    }

    /// The generator: rules typed in, else the site's published rules, else Apple's format; a length
    /// pins `minlength` and `maxlength`.
    static func generate(length: String, rules: String, domain: String) -> WebAppPages.Generated {
        var generated = WebAppPages.Generated(
            rulesText: rules,
            domain: domain,
            length: length,
            source: "Apple's format",
            warning: "",
            suggestions: []
        )
        var ruleText: String?
        if !rules.trimmingCharacters(in: .whitespaces).isEmpty {
            ruleText = rules
            generated.source = "yours"
        } else if !domain.trimmingCharacters(in: .whitespaces).isEmpty {
            let choice = ServicePasswordRules(requirements: nil, domains: [domain.trimmingCharacters(in: .whitespaces)])
            ruleText = choice.ruleText
            switch choice.source {
            case .quirk(let site): generated.source = "published for \(site)"
            default: generated.source = "none published for \(domain): Apple's format"
            }
        }
        if !length.isEmpty {
            guard let count = Int(length), (8...100).contains(count) else {
                generated.error = "The length is a number from 8 to 100."
                return generated
            }
            if ruleText == nil { generated.source = "letters and digits, \(count) characters" }
            ruleText =
                (ruleText ?? "required: lower; required: upper; required: digit;")
                + " minlength: \(count); maxlength: \(count);"
        }
        do {
            let generator: PasswordGenerator
            if let ruleText {
                generator = try PasswordGenerator(rules: PasswordRules.parse(ruleText).rules)
            } else {
                generator = PasswordGenerator()
            }
            let password = try generator.generate()
            let estimate = StrengthEstimator.shared.estimate(password)
            generated.password = password
            generated.score = estimate.score
        } catch {
            generated.error = "These rules cannot be met: \(error.message)"
        }
        return generated
    }
}
