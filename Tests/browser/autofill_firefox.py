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
        client.delete_session()
    finally:
        if firefox:
            firefox.terminate()
            try:
                firefox.wait(10)
            except subprocess.TimeoutExpired:
                firefox.kill()
        h.close()
