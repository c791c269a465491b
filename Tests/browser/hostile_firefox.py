"""hostile_pages.py's attacks in Firefox ESR (Marionette), where passkeys go through the page world
instead of a browser API: the attacks must fail there too, and cross-origin frames must follow the
Permissions Policy as Firefox itself would."""
import base64
import json
import os
import time

b64 = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
SECRETS = ["ada-Secret-1", "Bank-Secret-123", "victim", "bank.example"]


def firefox_hostile_pages(_):
    import autofill_browser as A
    from autofill_firefox import CREATE_SAVE_ROW, GET_FIRST_ACCOUNT_ROW, Firefox

    h = A.Harness(browser="firefox")
    f = None
    try:
        h.keyhaven("add", "https://bank.example", "--user", "victim", "--password", "Bank-Secret-123", password=True)
        f = Firefox(h)
        f.pair()
        # Script focus, synthetic events, DOM reads: no menu, nothing read, nothing filled.
        f.client.navigate(h.site + "/hostile-login.html")
        time.sleep(0.8)
        f.page("window.attackField('user').then((read) => { window.__read = JSON.stringify(read); })")
        f.wait_for(lambda: f.page("window.__read || null"), what="the page's attack")
        assert not f.shown(), "a menu showed for a field the page focused by script"
        loot = f.page("JSON.stringify(window.loot)")
        assert not any(secret in loot for secret in SECRETS), loot[:500]
        assert f.value("password") == ""
        # A script-submitted form: no prompt, nothing saved.
        f.page("window.scriptSubmit('ada', 'Attacker-Chosen-1')")
        time.sleep(1.5)
        assert not f.shown()
        assert "ada-Secret-1" in h.keyhaven("show", f"{h.site}/ada", "--reveal").stdout
        # The person's click: the menu, and a fill of their choice.
        f.click("user")
        f.click_row(0)
        f.wait_for(lambda: f.value("password") == "ada-Secret-1", what="the person's fill")

        # Passkeys: the page's synthetic clicks on Keyhaven's sheet do nothing; the person's do.
        origin = h.other
        f.client.navigate(origin + "/hostile-passkey.html")
        challenge = os.urandom(32)
        f.page("window.run('create', %s)" % json.dumps({"userId": "user-ff", "user": "ada", "displayName": "Ada",
                                                        "challenge": b64(challenge)}))
        f.wait_for(f.shown, what="Keyhaven's sheet")
        time.sleep(0.6)
        f.page("window.readKeyhaven(); window.clickKeyhaven(); 1")
        time.sleep(1.0)
        assert f.page("window.outcome") is None, "the page saved a passkey by itself"
        assert json.loads(h.keyhaven("passkey", "list", "--json", password=True).stdout) == []
        f.click_row(CREATE_SAVE_ROW)
        created = f.outcome("create() after the person's click")
        assert "ok" in created, created
        f.page("window.run('get', %s)" % json.dumps({"challenge": b64(os.urandom(32))}))
        f.wait_for(f.shown, what="Keyhaven's sheet for get()")
        time.sleep(0.6)
        f.page("window.clickKeyhaven(); 1")
        time.sleep(1.0)
        assert f.page("window.outcome") is None, "the page signed in with a passkey by itself"
        f.click_row(GET_FIRST_ACCOUNT_ROW)
        got = f.outcome("get() after the person's click")
        flags = base64.urlsafe_b64decode(got["ok"]["response"]["authenticatorData"] + "==")[32]
        assert flags & 0x01, f"no user presence: {flags:#x}"
        loot = f.page("JSON.stringify(window.loot.reads)")
        assert "ada" not in loot, loot[:500]
    finally:
        if f:
            f.close()
        h.close()


def firefox_cross_origin_frames(_):
    """A cross-origin frame's create()/get() in Firefox: without its embedder's
    `allow="publickey-credentials-…"` Keyhaven stays out and the browser's own refuses it, at once;
    with it, Keyhaven's sheet answers in the frame and the client data names the top origin."""
    import autofill_browser as A
    from autofill_firefox import CREATE_SAVE_ROW, Firefox
    from marionette_driver.by import By

    h = A.Harness(browser="firefox")
    f = None
    try:
        f = Firefox(h)
        f.pair()
        create = {"userId": "user-x", "user": "ada", "displayName": "Ada", "challenge": b64(os.urandom(32))}

        f.client.navigate(f"{h.site}/frame.html?src={h.other}/passkey.html")
        f.client.switch_to_frame(f.client.find_element(By.ID, "frame"))
        f.wait_for(lambda: f.client.find_element(By.ID, "user"), what="the framed page")
        started = time.time()
        f.page("window.run('create', %s)" % json.dumps(create))
        refused = f.outcome("the framed create() without allow", timeout=10)
        assert refused.get("error") == "NotAllowedError" and time.time() - started < 10, refused
        assert not f.shown(), "Keyhaven's sheet showed in a frame its embedder did not allow"
        f.client.switch_to_frame()

        allow = "publickey-credentials-create *; publickey-credentials-get *"
        f.client.navigate(f"{h.site}/frame.html?src={h.other}/passkey.html&allow={allow}")
        f.client.switch_to_frame(f.client.find_element(By.ID, "frame"))
        f.wait_for(lambda: f.client.find_element(By.ID, "user"), what="the framed page")
        f.page("window.run('create', %s)" % json.dumps(create))
        f.click_row(CREATE_SAVE_ROW)
        made = f.outcome("the allowed framed create()")
        client = json.loads(base64.urlsafe_b64decode(made["ok"]["response"]["clientDataJSON"] + "=="))
        assert client["crossOrigin"] is True and client["topOrigin"] == h.site and client["origin"] == h.other, client
    finally:
        if f:
            f.close()
        h.close()


SCENARIOS = {f.__name__: f for f in [firefox_hostile_pages, firefox_cross_origin_frames]}
