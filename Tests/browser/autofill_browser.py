#!/usr/bin/env python3
"""AutoFill in a real browser: `keyhaven agent`, `keyhaven browser-host` and the extension, end to end.

    Tests/browser/autofill_browser.py SCENARIO [SCENARIO…]     (or `all`)

Each scenario gets a fresh vault, agent, profile and browser: headless Chromium (Debian `chromium` +
`chromium-driver`, PyPI `selenium`) with the extension written by `keyhaven browser extension` and
the host manifest by `keyhaven browser install --user-data-dir`; test pages are served on
http://127.0.0.1:PORT and, as another site, http://localhost:PORT. `firefox` runs Firefox ESR through
Mozilla's Marionette client (PyPI `marionette-driver`). The binary is $KEYHAVEN_BINARY (default
.build/debug/keyhaven). Exit status 0 when every scenario passed. AutoFillBrowserTests (Swift) runs
one scenario per test.
"""
import http.server
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from browser_common import (KEYHAVEN, MASTER, KeyhavenFrame, Pages, chromium, click_until, free_port,  # noqa: E402
                            keyhaven_environment, run_keyhaven, run_scenarios, wait_for)

PAGES = pathlib.Path(__file__).resolve().parent / "pages"
SHINY = os.environ.get("SHINY_BINARY") or str(pathlib.Path(KEYHAVEN).parent / "shiny")
VERA = "Vera-Passkey-2026"
TOTP_SECRET = "JBSWY3DPEHPK3PXP"


def serve_pages(host):
    handler = lambda *args: http.server.SimpleHTTPRequestHandler(*args, directory=str(PAGES))
    http.server.SimpleHTTPRequestHandler.log_message = lambda *args: None
    server = Pages((host, free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Harness:
    def __init__(self, browser="chromium"):
        self.browser = browser
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="keyhaven-autofill-"))
        self.env = keyhaven_environment(self.dir)
        self.a = serve_pages("127.0.0.1")
        self.site = f"http://127.0.0.1:{self.a.server_address[1]}"
        self.b = serve_pages("127.0.0.1")
        self.other = f"http://localhost:{self.b.server_address[1]}"
        self.keyhaven("init", "--scrypt-log-n", "10", "--insecure-kdf", password=True)
        self.keyhaven("add", self.site, "--user", "ada", "--password", "ada-Secret-1", "--totp", TOTP_SECRET, password=True)
        self.agent = subprocess.Popen([KEYHAVEN, "agent", "--idle-lock", "1h"], env=self.env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: (self.dir / "run/keyhaven/agent.sock").exists(), what="the agent's socket")
        self.keyhaven("unlock", password=True)
        self.driver = None
        if browser == "chromium":
            self.start_browser()

    def keyhaven(self, *args, password=False, check=True, stdin=None):
        return run_keyhaven(self.env, *args, password=password, check=check, stdin=stdin, timeout=60)

    def start_browser(self):
        self.profile = self.dir / "profile"
        self.extension = self.dir / "extension"
        self.keyhaven("browser", "install", "--browser", "chromium", "--user-data-dir", str(self.profile))
        written = self.keyhaven("browser", "extension", "--output", str(self.extension))
        self.extension_id = written.stderr.strip().split()[-1]
        self.overlay_extension_sources(self.extension)
        self.driver = chromium(self.env, self.profile, self.extension)
        self.ui = KeyhavenFrame(self.driver)

    @staticmethod
    def overlay_extension_sources(directory):
        """$KEYHAVEN_EXTENSION_DIR (for working on the extension without rebuilding keyhaven): its
        scripts and pages replace the written ones; the manifest stays the one keyhaven wrote."""
        source = os.environ.get("KEYHAVEN_EXTENSION_DIR")
        if not source:
            return
        for path in pathlib.Path(source).iterdir():
            if path.is_file() and path.name != "manifest.json":
                shutil.copy(path, directory / path.name)

    def start_shiny(self):
        """shiny (the example service) as a process of its own, reached as http://localhost:PORT (a
        secure context whose host can be a passkey's RP ID)."""
        port = free_port()
        self.shiny_origin = f"http://localhost:{port}"
        self.shiny = subprocess.Popen([SHINY, "--port", str(port), "--public-url", self.shiny_origin,
                                       "--stop-when-stdin-closes"], env=self.env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.shiny.stdout.readline()
        assert "listening on" in line, line
        return self.shiny_origin

    def close(self):
        if self.driver:
            self.driver.quit()
        if getattr(self, "shiny", None):
            self.shiny.stdin.close()
            self.shiny.wait(10)
        self.agent.terminate()
        self.agent.wait(10)
        self.a.shutdown()
        self.b.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- pairing ---

    def popup(self):
        self.driver.get(f"chrome-extension://{self.extension_id}/popup.html")
        return wait_for(lambda: self.driver.find_element("id", "status").text not in ("", "…"), what="the popup's state")

    def pair(self, wrong_first=False):
        from selenium.webdriver.common.by import By

        self.popup()
        codes = {}
        waiter = threading.Thread(target=lambda: codes.update(
            json.loads(self.keyhaven("browser", "pair", "--json", "--timeout", "30").stdout)))
        waiter.start()
        self.driver.find_element(By.ID, "pair").click()
        waiter.join(35)
        code = codes["code"]
        field = self.driver.find_element(By.CSS_SELECTOR, "label[for=code]")
        assert field.text == "Pairing code", field.text
        if wrong_first:  # a wrong code counts, and the same request takes another try
            wrong = "%06d" % ((int(code) + 1) % 1_000_000)
            self.driver.find_element(By.ID, "code").send_keys(wrong)
            self.driver.find_element(By.ID, "confirm").click()
            wait_for(lambda: "wrong (2 more tries)" in self.driver.find_element(By.ID, "status").text,
                     what="the wrong code counted in the popup")
            self.driver.find_element(By.ID, "code").clear()
        self.driver.find_element(By.ID, "code").send_keys(code)
        self.driver.find_element(By.ID, "confirm").click()
        wait_for(lambda: "Paired" in self.driver.find_element(By.ID, "status").text, what="Paired in the popup")

    # --- pages ---

    def menu_options(self):
        """The actionable rows of Keyhaven's frame (menu, sheet or prompt) as the person sees them."""
        return self.ui.rows()

    def menu_text(self):
        return self.ui.text()

    def choose(self, element, text):
        element.click()
        option = wait_for(lambda: next((o for o in self.menu_options() if o.text.split("\n")[0] == text), None),
                          what=f"the option {text!r} (menu: {self.menu_text()!r})")
        option.click()

    def value(self, element_id):
        return self.driver.execute_script(f"return document.getElementById('{element_id}').value")


# --- scenarios ---

def pairing(h):
    h.pair(wrong_first=True)
    pairings = json.loads(h.keyhaven("browser", "pairings", "--json").stdout)
    assert len(pairings) == 1 and pairings[0]["browser"] == "chromium", pairings
    assert pairings[0]["name"] == "Chromium", pairings


def top_page(h):
    h.pair()
    h.driver.get(h.site + "/login.html")
    # Nothing is filled without a gesture.
    time.sleep(0.5)
    assert h.value("user") == "" and h.value("password") == ""
    h.choose(h.driver.find_element("id", "user"), "ada")
    wait_for(lambda: h.value("password") == "ada-Secret-1", what="the password filled")
    assert h.value("user") == "ada"
    events = json.loads(h.driver.find_element("id", "events").text)
    assert events.get("user", 0) >= 1 and events.get("password", 0) >= 1, events


def same_origin_frame(h):
    h.pair()
    h.driver.get(f"{h.site}/frame.html?src={h.site}/login.html")
    h.driver.switch_to.frame(h.driver.find_element("id", "frame"))
    wait_for(lambda: h.driver.find_element("id", "user"), what="the framed form")
    h.choose(h.driver.find_element("id", "user"), "ada")
    wait_for(lambda: h.value("password") == "ada-Secret-1", what="the framed password filled")


def cross_site_frame(h):
    h.pair()
    h.driver.get(f"{h.other}/frame.html?src={h.site}/login.html")
    h.driver.switch_to.frame(h.driver.find_element("id", "frame"))
    wait_for(lambda: h.driver.find_element("id", "user"), what="the framed form")
    h.choose(h.driver.find_element("id", "user"), "ada")
    wait_for(lambda: "another site" in h.menu_text(), what="the cross-site prompt")
    time.sleep(0.3)
    assert h.value("password") == "" and h.value("user") == "", "a cross-site frame was filled silently"
    # The person confirms in Keyhaven's own menu: then it fills.
    confirm = next(o for o in h.menu_options() if o.text.startswith("Fill ada"))
    confirm.click()
    wait_for(lambda: h.value("password") == "ada-Secret-1", what="the confirmed fill")


def username_then_password(h):
    h.pair()
    h.driver.get(h.site + "/step1.html")
    h.choose(h.driver.find_element("id", "user"), "ada")
    wait_for(lambda: h.value("user") == "ada", what="the user name filled")
    h.driver.find_element("id", "next").click()
    wait_for(lambda: "step2" in h.driver.current_url, what="step 2")
    h.choose(wait_for(lambda: h.driver.find_element("id", "password")), "ada")
    wait_for(lambda: h.value("password") == "ada-Secret-1", what="the password filled on step 2")


def late_form(h):
    h.pair()
    h.driver.get(h.site + "/late.html")
    user = wait_for(lambda: h.driver.find_element("id", "user"), what="the late form")
    h.choose(user, "ada")
    wait_for(lambda: h.value("password") == "ada-Secret-1", what="the late form filled")


def shadow_dom(h):
    h.pair()
    h.driver.get(h.site + "/shadow.html")
    root = wait_for(lambda: h.driver.find_element("id", "box").shadow_root, what="the shadow root")
    user = root.find_element("css selector", "#user")
    h.choose(user, "ada")
    read = lambda field: h.driver.execute_script(
        f"return document.getElementById('box').shadowRoot.getElementById('{field}').value")
    wait_for(lambda: read("password") == "ada-Secret-1", what="the shadow form filled")
    assert read("user") == "ada"


def segmented_code(h):
    h.pair()
    h.driver.get(h.site + "/otp.html")
    # The code of the 30-second window the fill fell in: read before and after (a boundary may pass).
    expected = {h.keyhaven("otp", h.site).stdout.strip()}
    h.choose(h.driver.find_element("id", "d0"), "ada")
    digits = wait_for(lambda: "".join(h.value(f"d{i}") for i in range(6)) if h.value("d5") else None,
                      what="six digits")
    expected.add(h.keyhaven("otp", h.site).stdout.strip())
    assert digits in expected, (digits, expected)


def generate_with_rules(h):
    h.pair()
    h.driver.get(h.site + "/signup.html")
    h.choose(h.driver.find_element("id", "password"), "Use strong password")
    password = wait_for(lambda: h.value("password"), what="a generated password")
    assert len(password) == 24 and all(c.islower() or c.isdigit() for c in password) and any(
        c.isdigit() for c in password), password
    assert h.value("repeat") == password


def prompt_button(h, text):
    """The prompt's row `text` ("Save", "Update"), waited for while the prompt is being shown."""
    return wait_for(lambda: next((o for o in h.menu_options() if o.text == text), None),
                    what=f"the {text!r} prompt (shown: {h.menu_text()!r})")


def save_after_signup(h):
    h.pair()
    h.driver.get(h.site + "/signup.html")
    h.driver.find_element("id", "user").send_keys("newbie")
    h.choose(h.driver.find_element("id", "password"), "Use strong password")
    password = wait_for(lambda: h.value("password"), what="a generated password")
    h.driver.find_element("id", "submit").click()
    # A click while the prompt is still being placed falls inside its guard: a person clicks again.
    click_until(lambda: prompt_button(h, "Save").click(),
                lambda: "newbie" in h.keyhaven("list").stdout, what="newbie in the vault")
    account = next(c for c in json.loads(h.keyhaven("list", "--json").stdout) if c["user"] == "newbie")
    assert account["services"] == [h.site], account
    shown = h.keyhaven("show", account["id"], "--reveal").stdout
    assert password in shown, shown


def update_after_change(h):
    h.pair()
    h.driver.get(h.site + "/change.html")
    h.driver.find_element("id", "current").send_keys("ada-Secret-1")
    h.driver.find_element("id", "password").send_keys("ada-Secret-2")
    h.driver.find_element("id", "submit").click()
    click_until(lambda: prompt_button(h, "Update").click(),
                lambda: "ada-Secret-2" in h.keyhaven("show", f"{h.site}/ada", "--reveal").stdout, what="the new password")
    history = json.loads(h.keyhaven("show", f"{h.site}/ada", "--json", "--reveal").stdout).get("history", [])
    assert any(item.get("password") == "ada-Secret-1" for item in history), history


def locked_then_unlock(h):
    h.pair()
    h.keyhaven("lock")
    h.driver.get(h.site + "/login.html")
    first = h.driver.current_window_handle
    h.driver.find_element("id", "user").click()
    wait_for(lambda: "locked" in h.menu_text(), what="locked in the menu")
    # The extension opened its unlock page. chromedriver cannot drive a tab an extension opened, so
    # the test checks it is there (DevTools' target list) and unlocks through the same page opened
    # in a tab of its own.
    targets = lambda: h.driver.execute_cdp_cmd("Target.getTargets", {})["targetInfos"]
    wait_for(lambda: any(t["url"] == f"chrome-extension://{h.extension_id}/unlock.html" for t in targets()),
             what="the unlock page the extension opened")
    h.driver.switch_to.new_window("tab")
    h.driver.get(f"chrome-extension://{h.extension_id}/unlock.html")
    label = wait_for(lambda: h.driver.find_element("css selector", "label[for=master]"), what="the unlock form")
    assert label.text == "Master password", label.text
    h.driver.find_element("id", "master").send_keys("not the master password")
    h.driver.find_element("css selector", "button[type=submit]").click()
    wait_for(lambda: "wrong" in h.driver.find_element("id", "status").text, what="the wrong password refused")
    assert "locked" in h.keyhaven("agent", "status", "--json").stdout
    h.driver.find_element("id", "master").send_keys(MASTER)
    h.driver.find_element("css selector", "button[type=submit]").click()
    wait_for(lambda: '"state":"unlocked"' in h.keyhaven("agent", "status", "--json").stdout, what="the agent unlocked")
    h.driver.switch_to.window(first)
    h.driver.find_element("tag name", "h1").click()
    h.choose(h.driver.find_element("id", "user"), "ada")
    wait_for(lambda: h.value("password") == "ada-Secret-1", what="the fill after unlocking")


def other_passwords(h):
    """"Other passwords…" opens Keyhaven's chooser page: another site's password fills this page only
    after the person confirms it there (a page the site can neither read nor click)."""
    h.pair()
    # Added by the CLI while the agent runs: the agent notices the vault changed on disk.
    h.keyhaven("add", "https://elsewhere.example", "--user", "bob", "--password", "bob-Secret-9", password=True)
    h.driver.get(h.site + "/login.html")
    h.choose(h.driver.find_element("id", "user"), "Other passwords…")
    import hostile_pages
    page, chooser = hostile_pages.chooser_tab(h)
    h.driver.switch_to.window(chooser)
    wait_for(lambda: h.driver.execute_script("return document.body.dataset.state") == "ready", what="the chooser")
    listed = [b.text for b in h.driver.find_elements("css selector", "#list button")]
    assert listed[0].startswith("ada") and "(this site)" in listed[0], listed  # this page's first
    next(b for b in h.driver.find_elements("css selector", "#list button") if b.text.startswith("bob")).click()
    assert "Use the password saved for https://elsewhere.example" in h.driver.find_element("id", "question").text
    h.driver.switch_to.window(page)
    assert h.value("password") == ""
    h.driver.switch_to.window(chooser)
    h.driver.find_element("id", "fill").click()
    h.driver.switch_to.window(page)
    wait_for(lambda: h.value("password") == "bob-Secret-9", what="bob's password, confirmed for this page")


def revoked_pairing(h):
    h.pair()
    pairing = json.loads(h.keyhaven("browser", "pairings", "--json").stdout)[0]["id"]
    h.keyhaven("browser", "pairings", "--revoke", pairing)
    h.driver.get(h.site + "/login.html")
    h.driver.find_element("id", "user").click()
    wait_for(lambda: "Pair this browser" in h.menu_text(), what="notPaired in the menu")
    assert h.value("password") == ""
    h.popup()
    status = h.driver.find_element("id", "status").text
    assert "not paired" in status.lower(), status
    assert h.driver.find_element("id", "pair").is_displayed()


# --- passkeys (issue 16): Chromium's webAuthenticationProxy → Keyhaven's chooser → the agent ---

def run_in_page(h, kind, options):
    h.driver.execute_script("window.run(arguments[0], arguments[1])", kind, options)


def page_outcome(h, what):
    return wait_for(lambda: h.driver.execute_script("return window.outcome"), what=what)


def sheet(h):
    """Keyhaven's passkey sheet (its frame in the page), once it shows its choices."""
    return wait_for(lambda: (lambda v: v if v and v["kind"] == "sheet" and v["rows"] else None)(h.ui.view()),
                    what="Keyhaven's passkey sheet")


def sheet_text(h):
    shown = h.ui.view()
    return h.ui.text() if shown and shown["kind"] == "sheet" else ""


def sheet_buttons(h):
    shown = h.ui.view()
    return h.ui.rows() if shown and shown["kind"] == "sheet" else []


def press(h, label):
    sheet(h)
    button = wait_for(lambda: next((b for b in sheet_buttons(h) if b.text.split("\n")[0] == label), None),
                      what=f"the button {label!r} (sheet: {sheet_text(h)!r})")
    button.click()


def passkey_list(h):
    return json.loads(h.keyhaven("passkey", "list", "--json", password=True).stdout)


def passkeys_on_a_plain_page(h):
    import base64
    import webauthn

    b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    origin = h.other  # http://localhost:PORT: a secure context whose host can be an RP ID
    h.pair()
    h.driver.get(origin + "/passkey.html")

    challenge = os.urandom(32)
    run_in_page(h, "create", {"userId": "user-42", "user": "ada", "displayName": "Ada L.", "challenge": b64(challenge)})
    sheet(h)
    assert "Save a passkey?" in sheet_text(h) and "For ada on localhost." in sheet_text(h), sheet_text(h)
    # The page can neither see Keyhaven's sheet (a closed root holding another origin's frame) nor
    # press its buttons for the person.
    time.sleep(0.45)
    assert h.driver.execute_script(
        "const s = document.querySelector('keyhaven-ui'); return [s && s.shadowRoot, window.frames.length]") == [None, 0]
    time.sleep(0.7)
    assert h.driver.execute_script("return window.outcome") is None and passkey_list(h) == []
    press(h, "Save passkey in Keyhaven")
    outcome = page_outcome(h, "the page's create()")
    assert "ok" in outcome, outcome
    registration = webauthn.verify_registration_response(
        credential=outcome["ok"], expected_challenge=challenge, expected_origin=origin, expected_rp_id="localhost")
    assert registration.credential_device_type == "multi_device" and registration.credential_backed_up
    stored = passkey_list(h)
    assert [(p["rpId"], p["userName"]) for p in stored] == [("localhost", "ada")], stored
    wait_for(lambda: sheet_text(h) == "", what="the sheet gone")

    # The site lists it in excludeCredentials: nothing to save. Cancel ends the page's call with
    # NotAllowedError; acknowledging ("OK") with InvalidStateError (WebAuthn §6.3.2).
    for button, error in (("Cancel", "NotAllowedError"), ("OK", "InvalidStateError")):
        run_in_page(h, "create", {"userId": "user-42", "user": "ada", "displayName": "Ada L.",
                                  "challenge": b64(os.urandom(32)), "exclude": [outcome["ok"]["id"]]})
        sheet(h)
        assert "already has a passkey" in sheet_text(h), sheet_text(h)
        assert "Save passkey in Keyhaven" not in [b.text for b in sheet_buttons(h)]
        press(h, button)
        assert page_outcome(h, "the excluded create()")["error"] == error
        assert len(passkey_list(h)) == 1
        wait_for(lambda: sheet_text(h) == "", what="the sheet gone")

    sign_count = 0
    for round in (1, 2):
        challenge = os.urandom(32)
        run_in_page(h, "get", {"challenge": b64(challenge)})
        sheet(h)
        assert "Sign in with a passkey" in sheet_text(h), sheet_text(h)
        options = [b for b in sheet_buttons(h) if b.text.split("\n")[0] not in ("Use another device or security key", "Cancel")]
        assert [o.text.split("\n")[0] for o in options] == ["ada"], [o.text for o in options]
        options[0].click()
        outcome = page_outcome(h, "the page's get()")
        assert "ok" in outcome, outcome
        assert base64.urlsafe_b64decode(outcome["ok"]["response"]["userHandle"] + "==") == b"user-42"
        verified = webauthn.verify_authentication_response(
            credential=outcome["ok"], expected_challenge=challenge, expected_origin=origin, expected_rp_id="localhost",
            credential_public_key=registration.credential_public_key, credential_current_sign_count=sign_count)
        assert verified.new_sign_count == sign_count + 1, verified
        sign_count = verified.new_sign_count

    # Signals: the site says it no longer knows the passkey (hidden, kept), then lists it again.
    credential_id = outcome["ok"]["id"]
    run_in_page(h, "signalUnknownCredential", {"rpId": "localhost", "credentialId": credential_id})
    wait_for(lambda: [p["hidden"] for p in passkey_list(h)] == [True], what="the passkey hidden by the signal")
    run_in_page(h, "get", {"challenge": b64(os.urandom(32))})
    sheet(h)
    assert "Keyhaven has no passkey for localhost." in sheet_text(h), sheet_text(h)
    press(h, "Cancel")
    assert page_outcome(h, "get() with the passkey hidden")["error"] == "NotAllowedError"
    run_in_page(h, "signalAllAcceptedCredentials",
                {"rpId": "localhost", "userId": b64(b"user-42"), "allAcceptedCredentialIds": [credential_id]})
    wait_for(lambda: [p["hidden"] for p in passkey_list(h)] == [False], what="the passkey restored by the signal")
    run_in_page(h, "signalCurrentUserDetails",
                {"rpId": "localhost", "userId": b64(b"user-42"), "name": "ada@example.com", "displayName": "Ada"})
    wait_for(lambda: [p["userName"] for p in passkey_list(h)] == ["ada@example.com"], what="the passkey renamed by the signal")


def passkeys_in_the_autofill_menu(h):
    """Conditional mediation: the page's `get({mediation: "conditional"})` (which Chromium's proxy
    never sees) is offered in Keyhaven's AutoFill menu on the `username webauthn` field; choosing the
    passkey answers it, verified by py_webauthn."""
    import base64
    import webauthn

    b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    origin = h.other
    h.pair()
    h.driver.get(origin + "/passkey.html")
    challenge = os.urandom(32)
    run_in_page(h, "create", {"userId": "user-7", "user": "ada", "displayName": "Ada", "challenge": b64(challenge)})
    press(h, "Save passkey in Keyhaven")
    created = page_outcome(h, "create()")
    registration = webauthn.verify_registration_response(
        credential=created["ok"], expected_challenge=challenge, expected_origin=origin, expected_rp_id="localhost")

    h.driver.get(origin + "/passkey.html")
    challenge = os.urandom(32)
    run_in_page(h, "conditional", {"challenge": b64(challenge)})
    time.sleep(0.3)
    assert h.driver.execute_script("return window.outcome") is None  # pending until chosen
    def passkey_option():
        # Open the menu again only while it lacks the passkey, and give a fresh menu the frame's
        # guard before it is read: a row read just after the field was clicked again would be
        # clicked inside the guard and (rightly) ignored.
        found = next((o for o in h.menu_options() if "passkey · localhost" in o.text), None)
        if found is None:
            h.driver.find_element("id", "user").click()
            time.sleep(0.5)
        return found

    option = wait_for(passkey_option, what="the passkey in the menu")
    assert option.text.split("\n")[0] == "ada", option.text
    option.click()
    outcome = page_outcome(h, "the conditional get()")
    assert "ok" in outcome, outcome
    verified = webauthn.verify_authentication_response(
        credential=outcome["ok"], expected_challenge=challenge, expected_origin=origin, expected_rp_id="localhost",
        credential_public_key=registration.credential_public_key, credential_current_sign_count=0)
    assert verified.new_sign_count == 1
    assert outcome["isPublicKeyCredential"], outcome


CONDITIONAL_CREATE = """
    const done = arguments[arguments.length - 1];
    const fromB64url = (t) => Uint8Array.from(atob(t.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
    window.__cc = null;
    navigator.credentials.create({ mediation: "conditional", publicKey: {
      rp: { id: location.hostname, name: "Login page" },
      user: { id: new TextEncoder().encode("user-" + arguments[0]), name: arguments[0], displayName: arguments[0] },
      challenge: fromB64url(arguments[1]),
      pubKeyCredParams: [{ type: "public-key", alg: -7 }],
      authenticatorSelection: { residentKey: "required", userVerification: "preferred" },
    } }).then((c) => { window.__cc = { ok: c.toJSON() }; }, (e) => { window.__cc = { error: e.name }; });
    done(true);
"""


def passkeys_conditional_create(h):
    """Conditional create: right after Keyhaven filled ada's password, the site's
    `create({mediation: "conditional"})` for ada gets a passkey without a question — only with the
    popup's switch on; for another user, or with the switch off, Keyhaven stays out."""
    import base64
    import webauthn

    b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    origin = h.other
    h.keyhaven("add", origin, "--user", "ada", "--password", "ada-Local-1", password=True)
    h.pair()

    def fill_then_ask(user):
        h.driver.get(origin + "/login.html")
        h.choose(h.driver.find_element("id", "user"), "ada")
        wait_for(lambda: h.value("password") == "ada-Local-1", what="ada's password filled")
        challenge = os.urandom(32)
        h.driver.execute_async_script(CONDITIONAL_CREATE, user, b64(challenge))
        return challenge

    # The switch is off by default: Keyhaven does not answer.
    fill_then_ask("ada")
    time.sleep(1.5)
    assert passkey_list(h) == [], "a passkey was made with conditional create switched off"

    h.popup()
    h.driver.find_element("id", "conditional-create").click()
    # Another account than the one filled: not Keyhaven's to answer either.
    fill_then_ask("eve")
    time.sleep(1.5)
    assert passkey_list(h) == [], "a passkey was made for an account Keyhaven did not fill"

    challenge = fill_then_ask("ada")
    outcome = wait_for(lambda: h.driver.execute_script("return window.__cc"), what="the conditional create()")
    assert "ok" in outcome, outcome
    # Nobody was asked: no user presence (UP=0, and no UV), as Chromium's own authenticator does;
    # an RP that requires presence refuses it.
    webauthn.verify_registration_response(
        credential=outcome["ok"], expected_challenge=challenge, expected_origin=origin, expected_rp_id="localhost",
        require_user_presence=False)
    flags = base64.urlsafe_b64decode(outcome["ok"]["response"]["authenticatorData"] + "==")[32]
    assert flags & 0x01 == 0 and flags & 0x04 == 0, f"flags {flags:#x}"
    try:
        webauthn.verify_registration_response(
            credential=outcome["ok"], expected_challenge=challenge, expected_origin=origin, expected_rp_id="localhost")
        raise AssertionError("a conditional create carried user presence")
    except webauthn.helpers.exceptions.InvalidRegistrationResponse:
        pass
    assert [(p["rpId"], p["userName"]) for p in passkey_list(h)] == [("localhost", "ada")]
    assert sheet_text(h) == "", "conditional create asked the person"


def passkeys_wait_for_the_unlock(h):
    """Locked, the proxy is detached: the browser's own authenticators answer (here none: no sheet
    appears); unlocked again, Keyhaven's sheet answers, and "Use another device" stands aside."""
    import base64
    b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    h.pair()
    h.keyhaven("lock")
    time.sleep(0.5)
    h.driver.get(h.other + "/passkey.html")
    run_in_page(h, "get", {"challenge": b64(os.urandom(16))})
    time.sleep(1.5)
    assert sheet_text(h) == "", "Keyhaven's sheet showed while locked"
    h.keyhaven("unlock", password=True)
    # Passkeys switched off in the popup: Keyhaven stays out of the way even unlocked.
    h.popup()
    switch = h.driver.find_element("id", "passkeys")
    assert switch.is_selected()
    switch.click()
    h.driver.get(h.other + "/passkey.html")
    time.sleep(0.5)
    run_in_page(h, "get", {"challenge": b64(os.urandom(16))})
    time.sleep(1.5)
    assert sheet_text(h) == "", "Keyhaven's sheet showed with passkeys switched off"
    h.popup()
    h.driver.find_element("id", "passkeys").click()
    h.driver.get(h.other + "/passkey.html")
    time.sleep(0.5)
    run_in_page(h, "get", {"challenge": b64(os.urandom(16))})
    sheet(h)
    assert "Keyhaven has no passkey for localhost." in sheet_text(h), sheet_text(h)
    press(h, "Use another device or security key")
    outcome = page_outcome(h, "the declined get()")
    assert outcome["error"] == "NotAllowedError", outcome
    # Keyhaven stands aside for the next try: the browser's own authenticators get it.
    run_in_page(h, "get", {"challenge": b64(os.urandom(16))})
    time.sleep(1.5)
    assert sheet_text(h) == "", "Keyhaven's sheet showed after the person chose another device"

# --- shiny as a WebAuthn relying party ---

def shiny_signup(h, user="vera"):
    h.driver.get(h.shiny_origin + "/signup")
    h.driver.find_element("id", "user").send_keys(user)
    h.driver.find_element("id", "password").send_keys(VERA)
    h.driver.find_element("id", "create").click()
    wait_for(lambda: "/account" in h.driver.current_url, what="the account page after sign-up")


def shiny_passkey_ids(h):
    h.driver.get(h.shiny_origin + "/account/passkeys")
    return [li.get_attribute("data-credential") for li in h.driver.find_elements("css selector", "li.passkey")]


def shiny_sign_in_with_passkey(h, choose=None):
    h.driver.delete_all_cookies()
    h.driver.get(h.shiny_origin + "/signin")
    assert h.driver.find_element("id", "user").get_attribute("autocomplete") == "username webauthn"
    wait_for(lambda: h.driver.execute_script("return document.getElementById('passkey-config') !== null"), what="the page")
    h.driver.find_element("id", "passkey-signin").click()
    if choose:
        choose()
    wait_for(lambda: h.driver.current_url.endswith("/account"), what="the account page after the passkey sign-in")
    assert "Signed in as vera" in h.driver.find_element("id", "welcome").text


def shiny_passkeys_virtual_authenticator(h):
    """shiny's pages against Chromium's own (virtual) authenticator: register, sign in, and the
    signal on the account page that makes the authenticator drop a passkey shiny removed."""
    from selenium.webdriver.common.virtual_authenticator import VirtualAuthenticatorOptions

    h.start_shiny()
    options = VirtualAuthenticatorOptions()
    options.protocol = VirtualAuthenticatorOptions.Protocol.CTAP2
    options.transport = VirtualAuthenticatorOptions.Transport.INTERNAL
    options.has_resident_key = options.has_user_verification = options.is_user_verified = True
    h.driver.add_virtual_authenticator(options)
    shiny_signup(h)
    h.driver.get(h.shiny_origin + "/account/passkeys")
    h.driver.find_element("id", "add-passkey").click()
    wait_for(lambda: h.driver.find_elements("css selector", "li.passkey"),
             what="the passkey listed")
    credentials = h.driver.get_credentials()
    assert [c.rp_id for c in credentials] == ["localhost"] and credentials[0].is_resident_credential, credentials
    # Conditional UI: the sign-in page's pending `mediation: "conditional"` request is answered by
    # the authenticator (Chromium's virtual one consents at once), without the button.
    h.driver.delete_all_cookies()
    h.driver.get(h.shiny_origin + "/signin")
    wait_for(lambda: h.driver.current_url.endswith("/account"), what="the conditional sign-in")
    assert "Signed in as vera" in h.driver.find_element("id", "welcome").text
    assert h.driver.get_credentials()[0].sign_count >= 1
    # Removed on shiny's page: the page's signalAllAcceptedCredentials makes the authenticator drop it.
    h.driver.get(h.shiny_origin + "/account/passkeys")
    h.driver.find_element("css selector", "li.passkey button").click()
    wait_for(lambda: h.driver.find_elements("id", "none"), what="no passkeys on shiny")
    wait_for(lambda: h.driver.get_credentials() == [], what="the virtual authenticator told by the signal")


def shiny_passkeys_with_keyhaven(h):
    """The extension registers and signs in on shiny; shiny's signal hides the passkey in Keyhaven
    when shiny removes it."""
    h.start_shiny()
    h.pair()
    shiny_signup(h)
    h.driver.get(h.shiny_origin + "/account/passkeys")
    h.driver.find_element("id", "add-passkey").click()
    sheet(h)
    assert "For vera on localhost." in sheet_text(h), sheet_text(h)
    press(h, "Save passkey in Keyhaven")
    ids = wait_for(lambda: h.driver.find_elements("css selector", "li.passkey") and shiny_passkey_ids(h),
                   what="the passkey listed on shiny")
    stored = passkey_list(h)
    assert [(p["rpId"], p["userName"], p["credentialId"]) for p in stored] == [("localhost", "vera", ids[0])], stored

    def choose():
        sheet(h)
        press(h, "vera")
    shiny_sign_in_with_passkey(h, choose)
    assert passkey_list(h)[0]["signCount"] == 1

    # shiny removes it: its page's signal hides it in Keyhaven (kept, not offered).
    h.driver.get(h.shiny_origin + "/account/passkeys")
    h.driver.find_element("css selector", "li.passkey button").click()
    wait_for(lambda: h.driver.find_elements("id", "none"), what="no passkeys on shiny")
    wait_for(lambda: [p["hidden"] for p in passkey_list(h)] == [True], what="the passkey hidden in Keyhaven")

SCENARIOS = {f.__name__: f for f in [pairing, top_page, same_origin_frame, cross_site_frame, username_then_password,
                                     late_form, shadow_dom, segmented_code, generate_with_rules, save_after_signup,
                                     update_after_change, locked_then_unlock, other_passwords, revoked_pairing,
                                     passkeys_on_a_plain_page, passkeys_in_the_autofill_menu, passkeys_conditional_create,
                                     passkeys_wait_for_the_unlock,
                                     shiny_passkeys_virtual_authenticator, shiny_passkeys_with_keyhaven]}


def firefox(_):
    """The Firefox smoke test builds its own harness (Marionette) from the class."""
    import autofill_firefox
    autofill_firefox.run(Harness)


def main(names):
    scenarios = dict(SCENARIOS, firefox=firefox)
    return run_scenarios(names, scenarios, lambda name: None if name == "firefox" else Harness(),
                         lambda name: pathlib.Path(os.environ.get("KEYHAVEN_SCREENSHOTS", "/tmp")) / f"autofill-{name}.png")


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    sys.exit(main(sys.argv[1:]))
