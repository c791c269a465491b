"""AutoFill in Firefox ESR (run through autofill_browser.py `firefox` and hostile_pages.py
`firefox_*`): the same extension (`keyhaven browser extension --browser firefox`) as a temporary
add-on, the host manifest in $HOME/.mozilla/native-messaging-hosts (`keyhaven browser install
--browser firefox`), Firefox driven by Mozilla's own Marionette client (PyPI marionette-driver; no
geckodriver).

Keyhaven's in-page UI is a frame of the extension's origin in a closed shadow root: neither the page
nor Marionette's content scripts can read it. The tests click its rows the way a person does — a
real pointer click at the row's place (every row is 40 px high, under a 5 px frame edge) — and
check what happened in the page and the vault."""
import json
import os
import signal
import socket
import subprocess
import threading
import time
import uuid

from marionette_driver.addons import Addons
from marionette_driver.by import By
from marionette_driver.marionette import Marionette

ROW_HEIGHT = 40
FRAME_EDGE = 5


class Firefox:
    """A headless Firefox ESR with Keyhaven's extension, paired with the harness's agent."""

    def __init__(self, h):
        from autofill_browser import free_port, wait_for

        self.h = h
        self.wait_for = wait_for
        extension = h.dir / "extension-firefox"
        h.keyhaven("browser", "extension", "--output", str(extension), "--browser", "firefox")
        h.overlay_extension_sources(extension)
        h.keyhaven("browser", "install", "--browser", "firefox")
        profile = h.dir / "firefox-profile"
        profile.mkdir()
        port = free_port()
        self.internal = str(uuid.uuid4())
        (profile / "user.js").write_text("\n".join([
            f'user_pref("marionette.port", {port});',
            'user_pref("xpinstall.signatures.required", false);',
            'user_pref("extensions.autoDisableScopes", 0);',
            f'user_pref("extensions.webextensions.uuids", {json.dumps(json.dumps({"autofill@keyhaven.dev": self.internal}))});',
            'user_pref("browser.shell.checkDefaultBrowser", false);',
            'user_pref("datareporting.policy.dataSubmissionEnabled", false);',
        ]) + "\n")
        self.process = subprocess.Popen(
            ["firefox-esr", "--headless", "--marionette", "--no-remote", "--remote-allow-system-access",
             "--profile", str(profile)],
            env=h.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # A group of its own, ended whole in close(): a Firefox that relaunched itself (its pid
            # no longer Popen's) was left running after a failed scenario on a loaded machine, three
            # browsers slowing every later test.
            start_new_session=True)

        def listening():
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        wait_for(listening, timeout=30, what="Marionette's port")
        self.client = Marionette(host="127.0.0.1", port=port)
        self.client.start_session()
        Addons(self.client).install(str(extension), temp=True)

    def close(self):
        try:
            self.client.delete_session()
        except Exception:
            pass
        group = self.process.pid  # its own session: the group id is its pid
        for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(group, sig)
            except ProcessLookupError:
                break
            deadline = time.time() + grace
            while time.time() < deadline and self._group_alive(group):
                self.process.poll()  # reaps the leader, so the group empties once it exits
                time.sleep(0.1)
            if not self._group_alive(group):
                break
        self.process.poll()

    @staticmethod
    def _group_alive(group):
        try:
            os.killpg(group, 0)
            return True
        except ProcessLookupError:
            return False

    def pair(self):
        client, h = self.client, self.h
        client.navigate(f"moz-extension://{self.internal}/popup.html")
        self.wait_for(lambda: client.find_element(By.ID, "status").text not in ("", "…"), what="the popup")
        codes = {}
        waiter = threading.Thread(target=lambda: codes.update(
            json.loads(h.keyhaven("browser", "pair", "--json", "--timeout", "30").stdout)))
        waiter.start()
        client.find_element(By.ID, "pair").click()
        waiter.join(35)
        client.find_element(By.ID, "code").send_keys(codes["code"])
        client.find_element(By.ID, "confirm").click()
        self.wait_for(lambda: "Paired" in client.find_element(By.ID, "status").text, what="Paired in Firefox's popup")

    # Marionette's scripts run in a sandbox that sees the page through Xray wrappers: the page's own
    # functions and objects are reached through its own eval, with JSON in between.
    def page(self, code):
        return self.client.execute_script("return window.wrappedJSObject.eval(arguments[0])", script_args=[code])

    def value(self, element_id):
        return self.client.execute_script(f"return document.getElementById('{element_id}').value")

    def shown(self):
        """Keyhaven's frame shown in the current browsing context (what the page can see of it)."""
        return self.client.execute_script(
            "const k = document.querySelector('keyhaven-ui'); return !!k && k.matches(':popover-open');")

    def click_row(self, index):
        """A real click on row `index` of Keyhaven's shown frame, after its 400 ms guard."""
        host = self.wait_for(lambda: self.shown() and self.client.find_element(By.CSS_SELECTOR, "keyhaven-ui"),
                             what="Keyhaven's frame in Firefox")
        time.sleep(0.5)
        height = self.client.execute_script("return arguments[0].getBoundingClientRect().height", script_args=[host])
        y = int(FRAME_EDGE + ROW_HEIGHT * index + ROW_HEIGHT / 2 - height / 2)
        self.client.actions.sequence("pointer", "mouse", {"pointerType": "mouse"}) \
            .pointer_move(0, y, origin=host).pointer_down().pointer_up().perform()

    def click(self, element_id):
        element = self.client.find_element(By.ID, element_id)
        self.client.actions.sequence("pointer", "mouse", {"pointerType": "mouse"}) \
            .pointer_move(0, 0, origin=element).pointer_down().pointer_up().perform()

    def outcome(self, what, timeout=15):
        return json.loads(self.wait_for(lambda: self.page("window.outcome && JSON.stringify(window.outcome)"),
                                        timeout=timeout, what=what))


# The sheet's rows (passkeys.js sheetRows): title, the account line, then the choices.
CREATE_SAVE_ROW = 2
GET_FIRST_ACCOUNT_ROW = 2


def passkeys(f):
    """Firefox has no webAuthenticationProxy: the page-world wrapper asks Keyhaven, whose sheet
    appears in the page; PyPI `webauthn` verifies what the page got."""
    import base64
    import os

    import webauthn

    b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    origin = f.h.other
    f.client.navigate(origin + "/passkey.html")

    challenge = os.urandom(32)
    f.page("window.run('create', %s)" % json.dumps(
        {"userId": "user-ff", "user": "ada", "displayName": "Ada", "challenge": b64(challenge)}))
    f.click_row(CREATE_SAVE_ROW)
    created = f.outcome("create() in Firefox")
    assert "ok" in created, created
    registration = webauthn.verify_registration_response(
        credential=created["ok"], expected_challenge=challenge, expected_origin=origin, expected_rp_id="localhost")

    challenge = os.urandom(32)
    f.page("window.run('get', %s)" % json.dumps({"challenge": b64(challenge)}))
    f.click_row(GET_FIRST_ACCOUNT_ROW)
    got = f.outcome("get() in Firefox")
    assert "ok" in got, got
    verified = webauthn.verify_authentication_response(
        credential=got["ok"], expected_challenge=challenge, expected_origin=origin, expected_rp_id="localhost",
        credential_public_key=registration.credential_public_key, credential_current_sign_count=0)
    assert verified.new_sign_count == 1
    # What the page got passes `instanceof PublicKeyCredential`, with an ArrayBuffer rawId.
    assert created["isPublicKeyCredential"] and got["isPublicKeyCredential"] and got["rawIdMatches"], (created, got)


def run(Harness):
    """The smoke test: pairing through the popup, a fill after the person's choice, passkeys."""
    h = Harness(browser="firefox")
    f = None
    try:
        f = Firefox(h)
        f.pair()
        pairings = json.loads(h.keyhaven("browser", "pairings", "--json").stdout)
        assert [p["browser"] for p in pairings] == ["firefox"], pairings

        # A fill in the top page, after choosing (the menu: ada, then "Other passwords…").
        f.client.navigate(h.site + "/login.html")
        f.click("user")
        f.click_row(0)
        f.wait_for(lambda: f.value("password") == "ada-Secret-1", what="the password filled in Firefox")
        passkeys(f)
    finally:
        if f:
            f.close()
        h.close()
