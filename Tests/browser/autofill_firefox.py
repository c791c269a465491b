"""The Firefox ESR smoke test of AutoFill (run through autofill_browser.py `firefox`): the same
extension (`keyhaven browser extension --browser firefox`) as a temporary add-on, the host manifest
in $HOME/.mozilla/native-messaging-hosts (`keyhaven browser install --browser firefox`), Firefox
driven by Mozilla's own Marionette client (PyPI marionette-driver; no geckodriver). Pairs through
the popup, then fills the top page after the person chooses the account."""
import json
import subprocess
import threading
import uuid

from marionette_driver.addons import Addons
from marionette_driver.by import By
from marionette_driver.marionette import Marionette


def passkeys(h, client, wait_for):
    """Firefox has no webAuthenticationProxy: the page-world wrapper asks Keyhaven, whose sheet
    appears in the page; PyPI `webauthn` verifies what the page got."""
    import base64
    import os
    import time

    import webauthn

    b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    origin = h.other
    client.navigate(origin + "/passkey.html")

    def button(label):
        found = wait_for(lambda: client.execute_script(
            "const s = document.querySelector('keyhaven-passkey');"
            "return s ? [...s.shadowRoot.querySelectorAll('button')].find(b => b.textContent.split('\\n')[0] === arguments[0]"
            " || b.firstChild && b.firstChild.textContent === arguments[0]) || null : null;", script_args=[label]),
            what=f"{label!r} in Keyhaven's sheet in Firefox")
        time.sleep(0.45)  # the sheet ignores clicks in its first 400 ms
        return found

    # Marionette's scripts run in a sandbox that sees the page through Xray wrappers: the page's own
    # functions and objects are reached through its own eval, with JSON in between.
    def page(code):
        return client.execute_script("return window.wrappedJSObject.eval(arguments[0])", script_args=[code])

    def outcome(what):
        return json.loads(wait_for(lambda: page("window.outcome && JSON.stringify(window.outcome)"), what=what))

    challenge = os.urandom(32)
    page("window.run('create', %s)" % json.dumps(
        {"userId": "user-ff", "user": "ada", "displayName": "Ada", "challenge": b64(challenge)}))
    button("Save passkey in Keyhaven").click()
    created = outcome("create() in Firefox")
    assert "ok" in created, created
    registration = webauthn.verify_registration_response(
        credential=created["ok"], expected_challenge=challenge, expected_origin=origin, expected_rp_id="localhost")

    challenge = os.urandom(32)
    page("window.run('get', %s)" % json.dumps({"challenge": b64(challenge)}))
    button("ada").click()
    got = outcome("get() in Firefox")
    assert "ok" in got, got
    verified = webauthn.verify_authentication_response(
        credential=got["ok"], expected_challenge=challenge, expected_origin=origin, expected_rp_id="localhost",
        credential_public_key=registration.credential_public_key, credential_current_sign_count=0)
    assert verified.new_sign_count == 1
    # What the page got passes `instanceof PublicKeyCredential`, with an ArrayBuffer rawId.
    assert created["isPublicKeyCredential"] and got["isPublicKeyCredential"] and got["rawIdMatches"], (created, got)


def run(Harness):
    from autofill_browser import free_port, wait_for

    h = Harness(browser="firefox")
    firefox = None
    try:
        extension = h.dir / "extension-firefox"
        h.keyhaven("browser", "extension", "--output", str(extension), "--browser", "firefox")
        h.keyhaven("browser", "install", "--browser", "firefox")
        profile = h.dir / "firefox-profile"
        profile.mkdir()
        port = free_port()
        internal = str(uuid.uuid4())
        (profile / "user.js").write_text("\n".join([
            f'user_pref("marionette.port", {port});',
            'user_pref("xpinstall.signatures.required", false);',
            'user_pref("extensions.autoDisableScopes", 0);',
            f'user_pref("extensions.webextensions.uuids", {json.dumps(json.dumps({"autofill@keyhaven.dev": internal}))});',
            'user_pref("browser.shell.checkDefaultBrowser", false);',
            'user_pref("datareporting.policy.dataSubmissionEnabled", false);',
        ]) + "\n")
        firefox = subprocess.Popen(
            ["firefox-esr", "--headless", "--marionette", "--no-remote", "--remote-allow-system-access",
             "--profile", str(profile)],
            env=h.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import socket

        def listening():
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        wait_for(listening, timeout=30, what="Marionette's port")
        client = Marionette(host="127.0.0.1", port=port)
        client.start_session()
        Addons(client).install(str(extension), temp=True)

        # Pairing through the popup.
        client.navigate(f"moz-extension://{internal}/popup.html")
        wait_for(lambda: client.find_element(By.ID, "status").text not in ("", "…"), what="the popup")
        codes = {}
        waiter = threading.Thread(target=lambda: codes.update(
            json.loads(h.keyhaven("browser", "pair", "--json", "--timeout", "30").stdout)))
        waiter.start()
        client.find_element(By.ID, "pair").click()
        waiter.join(35)
        client.find_element(By.ID, "code").send_keys(codes["code"])
        client.find_element(By.ID, "confirm").click()
        wait_for(lambda: "Paired" in client.find_element(By.ID, "status").text, what="Paired in Firefox's popup")
        pairings = json.loads(h.keyhaven("browser", "pairings", "--json").stdout)
        assert [p["browser"] for p in pairings] == ["firefox"], pairings

        # A fill in the top page, after choosing.
        client.navigate(h.site + "/login.html")
        client.find_element(By.ID, "user").click()
        wait_for(lambda: client.execute_script(
            "const m = document.querySelector('keyhaven-menu');"
            "const o = m && [...m.shadowRoot.querySelectorAll('[role=option]')].find(o => o.textContent.startsWith('ada'));"
            "if (o) { o.click(); return true; } return false;"), what="ada in Firefox's menu")
        wait_for(lambda: client.execute_script("return document.getElementById('password').value") == "ada-Secret-1",
                 what="the password filled in Firefox")
        passkeys(h, client, wait_for)
        client.delete_session()
    finally:
        if firefox:
            firefox.terminate()
            try:
                firefox.wait(10)
            except subprocess.TimeoutExpired:
                firefox.kill()
        h.close()
